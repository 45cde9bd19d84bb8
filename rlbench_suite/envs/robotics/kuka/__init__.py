"""``KukaReach``: the KUKA iiwa on PyBullet (``env``) and its IK reference controller
(``experts``)."""
