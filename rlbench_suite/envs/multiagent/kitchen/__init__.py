"""Kitchen, an Overcooked-style two-cook game: ``layouts`` (maps, tile and item codes),
``observation`` (the observation layout, encoded by the env and decoded by the cooks), ``env``
and the scripted cooks of the zero-shot-coordination split (``agents``)."""
