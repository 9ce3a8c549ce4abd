"""The README.md inside a bundle, written for the maintainer who receives it, and the verdict rows
that `reprokit show` prints from the same data."""

from __future__ import annotations

from collections import Counter

from reprokit.common.rows import case_cells

ROW_COLUMNS = ("id", "family", "control", "expect", "verdict", "met", "status", "tma", "reason")


def verdict_rows(results: dict) -> list[dict]:
    """One row of strings per case: id, family, control, expect, verdict, met, status, tma, reason."""
    return [{k: cells[k] for k in ROW_COLUMNS} for cells in map(case_cells, results.get("cases", []))]


def verdict_summary(results: dict) -> str:
    """'12 cases: 9 met, 2 not met, 1 not judged'."""
    met = Counter({True: "met", False: "not met"}.get(c.get("met"), "not judged") for c in results.get("cases", []))
    parts = [f"{met[k]} {k}" for k in ("met", "not met", "not judged") if met[k]]
    n = len(results.get("cases", []))
    return f"{n} case{'s' if n != 1 else ''}" + (": " + ", ".join(parts) if parts else "")


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def environment_lines(env: dict) -> list[str]:
    """Bullet points summarising env.json: OS, Python, Triton, torch, ptxas, GPU."""
    osi = env.get("os") or {}
    py = env.get("python") or {}
    pkgs = env.get("packages") or {}
    tools = env.get("tools") or {}
    out = [f"- OS: {osi.get('distro') or osi.get('system', '?')} ({osi.get('system', '?')} {osi.get('release', '?')}, "
           f"{osi.get('machine', '?')})",
           f"- Python: {py.get('version', '?')}"]
    for name in ("triton", "torch"):
        pkg = pkgs.get(name)
        out.append(f"- {name}: {pkg['version'] if pkg else 'not installed'}")
    for name in ("ptxas", "cuobjdump", "nvdisasm"):
        tool = tools.get(name)
        if tool:
            out.append(f"- {name}: {tool.get('version') or 'version unknown'} ({tool.get('path') or 'not found'})")
    gpu = env.get("gpu")
    if gpu and gpu.get("available"):
        names = ", ".join(sorted({str(d.get("name")) for d in gpu.get("devices", [])})) or "none"
        cuda = f", CUDA {gpu['cuda_driver_version']}" if gpu.get("cuda_driver_version") else ""
        out.append(f"- GPU: {names}; driver {gpu.get('driver', '?')}{cuda}")
    elif gpu:
        out.append(f"- GPU: not readable ({gpu.get('reason', 'unknown reason')})")
    else:
        out.append("- GPU: none recorded (compile-only run)")
    if env.get("redacted"):
        out.append(f"- Redacted variables: {', '.join(env['redacted'])}")
    if env.get("unread_knobs"):
        out.append("- Variables this Triton never reads: " + ", ".join(k["name"] for k in env["unread_knobs"]))
    return out


def pinned(stack: dict) -> str:
    """The stack's pins, as stacks.toml states them (not necessarily what ran: see what_ran)."""
    return ", ".join(f"{k} {stack[k]}" for k in ("triton", "torch", "cuda", "python") if stack.get(k))


def what_ran(manifest: dict, env: dict) -> str:
    """What really ran, from env.json and the executor's facts. A venv or local run uses the
    host's Python and no image, and a compile-only stack has no torch, whatever the pins say."""
    ex = manifest["executor"]
    pkgs = env.get("packages") or {}

    def version(name):
        return (pkgs.get(name) or {}).get("version") or "not installed"

    what = (f"Python {(env.get('python') or {}).get('version') or '?'}, triton {version('triton')}, "
            f"torch {version('torch')}")
    if ex.get("name") == "docker":
        digest = manifest["stack"].get("image_digest") or ex.get("image_id") or "digest unknown"
        where = f"in image `{ex.get('image') or '?'}` (`{digest}`)"
        if ex.get("base_image"):
            where += f", built on `{ex['base_image']}`"
    else:
        where = "on the host, in no image (the stack's pinned base image serves docker runs)"
    return f"{what}, {where}"


def gpu_check_lines(plan: dict | None) -> list[str]:
    """What plan.json's `gpu` says of the GPU run: a GPU that is not the profile's, clocks locked."""
    gpu = (plan or {}).get("gpu") or {}
    host = gpu.get("host") or {}
    out = []
    if gpu.get("mismatch"):
        out.append(f"**Not the profile's GPU**: ran on GPU {host.get('index', '?')}, a {host.get('name', '?')} "
                   f"({'; '.join(gpu['mismatch'])}), with `--allow-gpu-mismatch`.")
    if gpu.get("lock_clocks"):
        out.append(f"The SM clock was locked for the run (`--lock-clocks {gpu['lock_clocks']}`) and reset after; "
                   "logs/harness.log says at which frequency.")
    return out


def render(name: str, *, manifest: dict, results: dict, env: dict, plan: dict | None = None) -> str:
    """The README text. `manifest` is the manifest being written (files list not needed)."""
    stack, profile = manifest["stack"], manifest["profile"]
    pins = pinned(stack)
    lines = [
        f"# {name}",
        "",
        f"A reprokit bundle: the `{manifest['suite']}` suite, {manifest['mode']} mode, on stack `{stack['name']}`"
        + (f" (pinned: {pins})" if pins else "") + f", for GPU profile `{profile['key']}` ({profile['name']}, "
        f"{profile['arch']}).",
        f"Ran under the `{manifest['executor']['name']}` executor: {what_ran(manifest, env)}. Packed "
        f"{manifest['created']} by reprokit {manifest['reprokit']}. {verdict_summary(results)}.",
    ]
    if stack.get("base_image"):
        lines.append(f"Pinned base image: `{stack['base_image']}`.")
    if manifest.get("parent"):
        lines.append(f"Replayed from the bundle with sha256 `{manifest['parent']}`.")
    lines += gpu_check_lines(plan)
    if manifest["share"]["applied"]:
        lines.append("Shared mode: host name, user name, home paths and GPU serials/UUIDs are replaced by placeholders"
                     " in text files (binary files are packed byte-exact).")
    if manifest["redaction"].get("unscanned"):
        lines.append(f"{len(manifest['redaction']['unscanned'])} file(s) under trace/tensors/ are the traced program's "
                     "own tensors, packed byte-exact and not scanned for secrets or host names.")
    lines += [
        "",
        "## Check it",
        "",
        "With coreutils alone (SHA256SUMS covers every file but itself, manifest.json included):",
        "",
        "```sh",
        f"tar xzf {name}.tgz",
        f"cd {name}",
        "sha256sum -c SHA256SUMS",
        "```",
        "",
        f"Or, without extracting: `reprokit verify {name}.tgz` (also checks the archive's structure and the schemas, "
        "and recounts every TMA verdict from the IR).",
        "",
        "Who made it: if the sender signed it, `{0}.tgz.sig` sits beside it (an SSH signature, namespace "
        "`reprokit-bundle`). Put the sender's public key in an `allowed_signers` file (a line "
        "`alice@example.com ssh-ed25519 AAAA...`) and check it with OpenSSH alone:".format(name),
        "",
        "```sh",
        f"ssh-keygen -Y verify -f allowed_signers -I alice@example.com -n reprokit-bundle -s {name}.tgz.sig < {name}.tgz",
        "```",
        "",
        f"or with `reprokit verify {name}.tgz --allowed-signers allowed_signers`. Without a signature the checksums "
        "prove only that the files are the ones listed, not who listed them.",
        "",
        "## Reproduce it",
        "",
        "```sh",
        f"reprokit replay {name}.tgz",
        "```",
        "",
        "Replay reruns this bundle's own plan.json with its own kernels/ sources on the same stack and GPU profile, "
        "and writes a new bundle whose manifest names this one as its parent.",
    ]
    if any("reproducer_py" in (c.get("artifacts") or {}) for c in results.get("cases", [])):
        triton = results.get("triton") or "X"
        lines += ["", "Without reprokit, one case at a time: each `cases/<id>/reproducer.py` holds the kernel and its "
                  f"exact compile, and needs only Triton (`pip install triton=={triton} && python "
                  "cases/<id>/reproducer.py`); it prints the TMA ops per IR level and the verdict, and exits 0 "
                  "when that verdict is the one recorded here."]
    lines += [
        "",
        "## Verdicts",
        "",
    ]
    rows = verdict_rows(results)
    lines += _table(["case", "control", "expect", "verdict", "met", "status", "TMA ops", "reason"],
                    [[r["id"], r["control"], r["expect"], r["verdict"], r["met"], r["status"], r["tma"], r["reason"]]
                     for r in rows])
    lines += ["", "## Environment", ""] + environment_lines(env)
    lines += [
        "",
        "## Layout",
        "",
        "- `plan.json`: what was asked (profile, mode, every case); `kernels/`: the sources it names",
        "- `results.json`: one record per case; `summary.tsv`: the same, one row each",
        "- `env.json`: software and GPU snapshot taken inside the stack",
        "- `cases/<id>/`: IR at every level (ttir, ttgir, llir, ptx, sass), cubin, metadata and compiler logs",
        "- `logs/`: the harness's own log",
        "- `manifest.json`: provenance and every file's sha256, size and role; `SHA256SUMS`: for `sha256sum -c`",
        "",
    ]
    return "\n".join(lines)
