"""TextWorld-style interactive fiction: ``world``, ``generator``, ``parser``, ``game``, the
``TextAdventure`` ``env``, ``TextNav`` (``nav``: a house on the same engine) and their exploring
``experts``."""
