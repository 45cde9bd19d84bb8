"""The suite's text games: observations and actions are strings (Gymnasium ``Text`` spaces).

One package per game or engine (``adventure`` with TextNav, ``maze``, ``wordle``, ``chess``,
``questions``), each with its experts; shared by all of them: ``text_io`` (spaces, reading
commands) and ``random_admissible`` (the random-admissible-command baseline).
"""
