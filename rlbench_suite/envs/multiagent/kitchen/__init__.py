"""Kitchen, an Overcooked-style two-cook game: ``layouts`` (maps and tile codes), ``env`` and
the scripted cooks of the zero-shot-coordination split (``agents``)."""
