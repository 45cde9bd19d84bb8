"""2x2 matrix games: the Robinson-Goforth ``topology``, the PettingZoo ``game``, its batched
``vector`` env, equilibria and best responses (``solve``) and scripted players (``agents``)."""
