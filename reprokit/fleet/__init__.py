"""Fleets: one frozen plan bundle run over (stack x GPU profile x shard) on the machines of a
Slurm cluster, then collected into one verified, cross-machine grid.

    spec.py     the fleet TOML: per GPU profile the Slurm request (--gpus, partition, constraint)
    state.py    the fleet folder: fleet.json (tasks, jobs), each task's own records, atomic writes
    slurm.py    the only code that calls sbatch, squeue, sacct and scancel
    task.py     what one array task runs on its node: the frozen plan, on its stack and profile
    status.py   where every task stands (Slurm's word and reason, and the task's own record)
    collect.py  verify every bundle with the one reader, merge them into a grid, name what is missing
    k8s.py      the same fleet on paper: an indexed Kubernetes Job per GPU profile
"""
