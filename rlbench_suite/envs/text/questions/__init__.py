"""Question games on a rule-based oracle: ``oracle`` and ``oracle_parse`` (the shared engine),
``TwentyQuestions`` and ``GuessMyCity`` (their knowledge bases in ``data/``) and the
information-gain ``experts``."""
