"""Kitchen, an Overcooked-style two-cook game: ``layouts`` (maps, tile and item codes),
``observation`` (the observation layout, encoded by the env and decoded by the cooks), ``env``,
the scripted cooks of the zero-shot-coordination split (``agents``) and the training-only
bonus for a cook's own recipe steps (``contribution``)."""
