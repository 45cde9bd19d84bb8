"""The suite's own multi-agent environments (PettingZoo AEC and Parallel APIs): ``duel``,
``coop_nav``, ``kitchen``, ``matrix`` and ``predator_prey``, each with its scripted agents."""
