"""Chess text games: the engine and move reading (``game``), ``Chess`` and ``ChessEndgames``
(``env``) and the searching ``experts``."""
