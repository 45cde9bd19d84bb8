"""Wordle: ``env``, the information-gain ``experts`` and the word list
(``data/wordle_words.txt``)."""
