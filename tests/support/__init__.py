"""Support shared by the tests and the benchmarks: a clock the test moves (clock.py), waiting
for a condition with a bound (wait.py), a real Redis or Redis Cluster on free ports
(redis.py) and replicas in subprocesses (replicas.py)."""
