"""`gradescope --try` of the reference solutions inside Gradescope's default limits: 768 MB and half a CPU.

    sudo .venv/bin/python benchmarks/gradescope_limits.py                      # 11_training 12_conv 16_capstone
    sudo .venv/bin/python benchmarks/gradescope_limits.py 01_tensor --memory-mb 768 --cpu 0.5
    sudo .venv/bin/python benchmarks/gradescope_limits.py 12_conv --zip-option=--memory-mb=512

Each notebook's instructor version is handed in as the submission (its exercises are the reference answers) and
`python -m grading gradescope --try` runs in a cgroup v1 of its own (root only): memory.limit_in_bytes for the
container's memory (no swap), cpu.cfs_quota_us for its share of a CPU, cpuacct for the CPU seconds of every process
of the run. The grader runs as in Gradescope's container where bubblewrap cannot: students' code as the user
`nobody` (TINYTORCH_NO_BWRAP, TINYTORCH_STUDENT_USER). Printed per notebook: the score, run_autograder's wall time,
the CPU seconds of the whole run (the zip's build included), the peak memory the cgroup charged (page cache
included, as Docker charges it) and the times the memory limit was hit. On a machine that other work loads, the wall
time is longer than on Gradescope (the quota is a ceiling, not a share); CPU seconds / the CPU share is the wall time
of a run that gets its whole share.
"""

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CGROUPS = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "cpu", "cpuacct")


def own_path(controller):
    "This process's cgroup under a v1 controller (the measurement's cgroup is made inside it)."
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return path.lstrip("/")
    raise SystemExit(f"no cgroup v1 {controller} controller here: this measurement needs one")


def make_cgroup(name, memory_mb, cpu):
    "{controller: folder} of a new cgroup with the limits."
    folders = {c: CGROUPS / c / own_path(c) / name for c in CONTROLLERS}
    for folder in folders.values():
        folder.mkdir()
    (folders["memory"] / "memory.limit_in_bytes").write_text(str(memory_mb * 2**20))
    (folders["cpu"] / "cpu.cfs_period_us").write_text("100000")
    (folders["cpu"] / "cpu.cfs_quota_us").write_text(str(int(cpu * 100000)))
    return folders


def remove_cgroup(folders):
    "Remove the cgroups (after the run: whatever is left in them is killed first)."
    for folder in folders.values():
        for _ in range(50):
            pids = (folder / "cgroup.procs").read_text().split()
            if not pids:
                break
            for pid in pids:
                subprocess.run(["kill", "-9", pid], check=False)
            time.sleep(0.1)
        folder.rmdir()


def measure(notebook, memory_mb, cpu, zip_options):
    "One row: the notebook's --try inside the limits, with `zip_options` for the zip (`gradescope --memory-mb 512`)."
    folders = make_cgroup(f"gradescope-limits-{os.getpid()}-{notebook}", memory_mb, cpu)
    env = {**os.environ, "TINYTORCH_NO_BWRAP": "1", "TINYTORCH_STUDENT_USER": "nobody", "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "grading", "gradescope", "--assignment", notebook, *zip_options]
    argv += ["--try", str(REPO / "notebooks" / f"{notebook}.ipynb")]

    def enter():
        for folder in folders.values():
            (folder / "cgroup.procs").write_text(str(os.getpid()))

    try:
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, preexec_fn=enter)
        memory = folders["memory"]
        stats = dict(line.split() for line in (memory / "memory.oom_control").read_text().splitlines())
        return {
            "notebook": notebook,
            "exit": done.returncode,
            "score": found(r"^score: (.*)$", done.stdout),
            "wall": found(r"run_autograder took (\d+) s", done.stdout),
            "cpu": int((folders["cpuacct"] / "cpuacct.usage").read_text()) / 1e9,
            "peak": int((memory / "memory.max_usage_in_bytes").read_text()) / 2**20,
            "hits": int((memory / "memory.failcnt").read_text()),
            "oom_kills": stats.get("oom_kill", "?"),
            "tail": (done.stdout + done.stderr)[-600:],
        }
    finally:
        remove_cgroup(folders)


def found(pattern, text):
    match = re.search(pattern, text, re.MULTILINE)
    return match.group(1) if match else "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", default=["11_training", "12_conv", "16_capstone"])
    parser.add_argument("--memory-mb", type=int, default=768, help="the container's memory (default 768)")
    parser.add_argument("--cpu", type=float, default=0.5, help="its share of one CPU (default 0.5)")
    parser.add_argument("--zip-option", action="append", default=[], help="an option for `gradescope` (repeatable)")
    args = parser.parse_args()
    print(
        f"limits: {args.memory_mb} MB, {args.cpu:g} CPU, zip {' '.join(args.zip_option) or 'as made by default'}; load average before: {open('/proc/loadavg').read().strip()}"
    )
    print(
        f"{'notebook':<18} {'exit':>4} {'score':<28} {'wall s':>6} {'CPU s':>6} {'peak MB':>7} {'limit hit':>9} OOM kills"
    )
    for notebook in args.notebooks:
        row = measure(notebook, args.memory_mb, args.cpu, args.zip_option)
        print(
            f"{row['notebook']:<18} {row['exit']:>4} {row['score']:<28} {row['wall']:>6} {row['cpu']:>6.0f} "
            f"{row['peak']:>7.0f} {row['hits']:>9} {row['oom_kills']}"
        )
        if row["exit"] != 0:
            print("  " + row["tail"].replace("\n", "\n  "))
    print(f"load average after: {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    main()
