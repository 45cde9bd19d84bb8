"""MuJoCo table-top arm tasks (``env``: reach, push, pick-and-place on the model
``data/arm.xml``) and their scripted controllers (``experts``)."""
