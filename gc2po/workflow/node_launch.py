"""One machine's ``accelerate launch`` in a multi-node SLURM job (``launcher.num_machines`` > 1).

    python -m gc2po.workflow.node_launch ACCELERATE_LAUNCH_ARGS...

runs ``python -m accelerate.commands.launch --machine_rank R --main_process_ip H
ACCELERATE_LAUNCH_ARGS...``, with this interpreter, where R is this node's rank in the job step
(``SLURM_NODEID``) and H the step's first node (the first host of ``SLURM_STEP_NODELIST``, else
``SLURM_JOB_NODELIST``): machine 0 runs the main process and every node finds it there. The
workflow starts it once per node with ``srun`` (gc2po.workflow.launch.srun_command); the
arguments, ``--num_machines`` among them, come from gc2po.workflow.launch.launcher_command.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence

NODE_LIST_VARS = ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST")
NODE_COUNT_VARS = ("SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES")


def _split_top_level(text: str) -> list[str]:
    """Split at the commas outside brackets: ``a[1,3],b`` -> ``["a[1,3]", "b"]``."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _expand_range(spec: str, node_list: str) -> list[str]:
    """``01-03,7`` -> ``["01", "02", "03", "7"]`` (zero padding kept, as SLURM writes it)."""
    out = []
    for item in spec.split(","):
        low, _, high = item.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise ValueError(f"bad range {item!r} in the SLURM node list {node_list!r}")
        width = len(low)
        out += [str(n).zfill(width) for n in range(int(low), int(high or low) + 1)]
    return out


def expand_node_list(node_list: str) -> list[str]:
    """The host names of a SLURM node list, in order (what ``scontrol show hostnames`` prints).

    ``gpu[01-02,07],login3`` -> ``["gpu01", "gpu02", "gpu07", "login3"]``; several bracket
    groups in one name expand as a product (``r[1-2]n[1-2]`` -> r1n1, r1n2, r2n1, r2n2).
    """
    hosts = []
    for entry in _split_top_level(node_list.strip()):
        match = re.match(r"([^\[]*)\[([^\]]*)\](.*)$", entry)
        if match is None:
            if not entry or "[" in entry or "]" in entry:
                raise ValueError(f"bad entry {entry!r} in the SLURM node list {node_list!r}")
            hosts.append(entry)
            continue
        prefix, spec, rest = match.groups()
        tails = expand_node_list(rest) if rest else [""]
        hosts += [f"{prefix}{n}{tail}" for n in _expand_range(spec, node_list) for tail in tails]
    return hosts


def _env(env: Mapping[str, str], names: Sequence[str]) -> tuple[str, str] | None:
    for name in names:
        if env.get(name):
            return name, env[name]
    return None


def node_settings(env: Mapping[str, str], num_machines: int) -> tuple[int, str]:
    """(machine rank, main process address) of this node from SLURM's environment.

    Raises ValueError naming the variable when it is missing or disagrees with
    ``num_machines`` (a step that does not span the job's nodes, one task per node).
    """
    rank = env.get("SLURM_NODEID")
    if rank is None or not rank.isdigit():
        raise ValueError(
            f"SLURM_NODEID is {rank!r}: launcher.num_machines {num_machines} runs one launcher "
            f"per node of a SLURM job step (srun --ntasks-per-node=1)"
        )
    if int(rank) >= num_machines:
        raise ValueError(f"SLURM_NODEID {rank} is not below launcher.num_machines {num_machines}")
    count = _env(env, NODE_COUNT_VARS)
    if count is not None and count[1] != str(num_machines):
        raise ValueError(
            f"{count[0]} is {count[1]} but launcher.num_machines is {num_machines}: "
            f"the step must span one node per machine"
        )
    node_list = _env(env, NODE_LIST_VARS)
    if node_list is None:
        raise ValueError(f"none of {list(NODE_LIST_VARS)} is set: not inside a SLURM job step")
    return int(rank), expand_node_list(node_list[1])[0]


def accelerate_command(args: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """``python -m accelerate.commands.launch --machine_rank R --main_process_ip H *args``."""
    if "--num_machines" not in args:
        raise ValueError("node_launch needs --num_machines (gc2po.workflow.launch adds it)")
    machines = int(args[list(args).index("--num_machines") + 1])
    rank, host = node_settings(env, machines)
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--machine_rank",
        str(rank),
        "--main_process_ip",
        host,
        *args,
    ]


def main(argv: Sequence[str] | None = None) -> None:
    try:
        command = accelerate_command(list(sys.argv[1:] if argv is None else argv), os.environ)
    except ValueError as err:
        sys.exit(f"gc2po.workflow.node_launch: {err}")
    print(f"node_launch: {' '.join(command[3:7])}", file=sys.stderr, flush=True)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
