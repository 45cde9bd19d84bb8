"""Environment implementations of the suite: one subpackage per family (``robotics``,
``multiagent``, ``text``) and one per environment, or close group, inside it, holding the
env, its vector or batched backend, the scripted bots or experts that play it and its data
files (``data/``, found beside the code). Helpers shared by several families sit here
(``vector_info``)."""
