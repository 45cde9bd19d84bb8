"""TextMaze, LMRL-Gym's maze task fully or partially observed: ``env`` and ``experts``."""
