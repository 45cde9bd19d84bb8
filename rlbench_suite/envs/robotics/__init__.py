"""The suite's robotic environments: quadrotors on PyBullet and NumPy (``quad``), the KUKA iiwa
on PyBullet (``kuka``) and a MuJoCo gantry arm (``arm``), each with its scripted experts."""
