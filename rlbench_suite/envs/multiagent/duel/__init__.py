"""Duel, a FightLadder-style fighting game: ``rules`` (and the observation layout), the
PettingZoo and single-player ``env``, and the ladder of scripted opponents (``bots``)."""
