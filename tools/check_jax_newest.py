"""Run every chapter's notebook on the newest JAX on PyPI, in a Debian trixie root.

    sudo .venv/bin/python tools/check_jax_newest.py                      # every chapter
    sudo .venv/bin/python tools/check_jax_newest.py --chapters numpy random
    sudo .venv/bin/python tools/check_jax_newest.py --root /srv/trixie --keep

The book is built with the JAX in ``uv.lock``; ``tools/check_jax_floor.py`` checks the
oldest JAX that jaxguide accepts. This script checks the other end, the newest release,
which is what a reader gets in Colab. JAX 0.11 and later need Python 3.12 or newer and
this project's machine has Python 3.11, so the check runs in a Debian trixie root
(Python 3.13) made with ``debootstrap`` from Debian's packages:

1. ``--root`` (default ``~/.cache/jaxguide/trixie``) is created, if absent, with
   ``debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,
   ca-certificates trixie ROOT MIRROR``, the mirror being the host's Debian mirror from
   its apt sources (``--mirror`` to choose another). It is kept for later runs.
2. The host's ``/etc/resolv.conf``, ``/etc/hosts`` and local certificate authorities
   (``/usr/local/share/ca-certificates``, for a TLS-inspecting proxy) are copied in.
3. In a fresh virtual environment inside the root it installs the jaxguide wheel built
   from this checkout with the newest jax, jaxlib, flax, optax and orbax-checkpoint
   (unpinned), ipykernel and nbclient, and prints the versions pip resolved.
4. It executes each chapter's notebook from ``notebooks/`` (what a Colab reader opens)
   with nbclient, two at a time, the longest first (``jaxguide_build.notebook_runs``,
   whose runner file is copied into the root), each in its own mount and PID namespace
   (``unshare``) chrooted into the root with ``/proc`` and ``/dev`` mounted: the mounts
   and any process left over vanish with the namespace.

It prints one line per chapter (pass, or FAIL with the error, and the time taken),
then under it the claims of the page that did not hold on this JAX: the ``✗ key: ...``
lines that ``jaxguide.claim`` prints instead of stopping, as ``jaxguide.page.failed_claims``
reads them (they differ from the book's build; not failures), and any warning the
notebook printed. It exits 1 if a chapter
failed. It needs root (debootstrap, chroot, mounts), ``debootstrap``
(``apt-get install debootstrap``) and ``unshare`` (util-linux), PyPI and a Debian mirror.
Like the floor check it is not part of ``make test``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from jaxguide.page import failed_claims
from jaxguide_build import notebook_runs, notebooks
from jaxguide_build.environment import CommandFailed, build_wheel
from jaxguide_build.outputs import ANSI, printed

#: The longest a cell may run, in seconds.
CELL_TIMEOUT = 900
SUITE = "trixie"  # Debian 13: Python 3.13
PACKAGES = ("python3", "python3-venv", "python3-pip", "ca-certificates")
DEFAULT_MIRROR = "http://deb.debian.org/debian"
#: What pip installs beside the jaxguide wheel: unpinned, so the newest that fit.
NEWEST = ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "ipykernel", "nbclient")
#: Versions printed after the install (distribution names).
SHOWN = ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "numpy", "jaxguide")
#: The environment every command inside the root gets, and nothing else from the host.
INSIDE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",  # pip's cache stays in the root between runs
    "LANG": "C.UTF-8",
    "PIP_CERT": "/etc/ssl/certs/ca-certificates.crt",  # Debian's store, with the host's CAs
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
}
# Run by unshare in new mount and PID namespaces: mount /proc and /dev in the root, then
# become the command chrooted there. Both mounts end with the namespace.
ENTER = (
    'r="$1"; shift; '
    'mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" && exec chroot "$r" "$@"'
)

VERSIONS = """
import json, sys, importlib.metadata as md, jaxguide.page
v = {"python": sys.version.split()[0], "book": jaxguide.page.BOOK_JAX}
v.update({name: md.version(name) for name in sys.argv[1:]})
print(json.dumps(v))
"""


def fail(message: str) -> SystemExit:
    return SystemExit(f"check_jax_newest: {message}")


def default_root() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "jaxguide" / SUITE


def debian_mirror(sources: list[tuple[str, str]]) -> str | None:
    """The Debian archive among apt sources: (file name, text) pairs from
    ``/etc/apt/sources.list`` (one-line ``deb URI suite ...``) and ``sources.list.d``
    (``.list``, or deb822 ``.sources`` stanzas). The first ``deb`` source whose URI
    ends in ``/debian`` (not ``debian-security``), or None."""
    uris = []
    for name, text in sources:
        if name.endswith(".sources"):
            for stanza in re.split(r"\n\s*\n", text):
                fields = dict(
                    (k.strip().lower(), v.strip())
                    for k, _, v in (
                        line.partition(":")
                        for line in stanza.splitlines()
                        if ":" in line and not line.lstrip().startswith("#")
                    )
                )
                if "deb" in fields.get("types", "").split() and fields.get("enabled") != "no":
                    uris += fields.get("uris", "").split()
        else:
            for line in text.splitlines():
                words = re.sub(r"\[[^\]]*\]", " ", line.split("#")[0]).split()
                if len(words) >= 2 and words[0] == "deb":
                    uris.append(words[1])
    found = [u.rstrip("/") for u in uris if re.search(r"^https?://.*/debian/?$", u)]
    return found[0] if found else None


def host_mirror() -> str:
    """The host's Debian mirror from its apt sources, else deb.debian.org."""
    apt = Path("/etc/apt")
    files = [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*"))]
    sources = [(f.name, f.read_text(errors="replace")) for f in files if f.is_file()]
    return debian_mirror(sources) or DEFAULT_MIRROR


def debootstrap_command(root: Path, mirror: str) -> list[str]:
    return [
        "debootstrap",
        "--variant=minbase",
        f"--include={','.join(PACKAGES)}",
        SUITE,
        str(root),
        mirror,
    ]


def inside(root: Path, argv: list[str]) -> list[str]:
    """The host command that runs ``argv`` in the root: own mount and PID namespaces,
    /proc and /dev mounted, only :data:`INSIDE_ENV` in the environment."""
    env = [f"{k}={v}" for k, v in INSIDE_ENV.items()]
    return [
        "unshare",
        "--mount",
        "--pid",
        "--fork",
        "--kill-child",
        "sh",
        "-c",
        ENTER,
        "sh",
        str(root),
        "/usr/bin/env",
        "-i",
        *env,
        *argv,
    ]


def run_inside(root: Path, *argv: str) -> str:
    done = subprocess.run(inside(root, list(argv)), capture_output=True, text=True)
    if done.returncode != 0:
        raise fail(
            f"{' '.join(argv[:4])} ... failed in {root}:\n{(done.stdout + done.stderr)[-3000:]}"
        )
    return done.stdout


def preflight(root: Path, need_debootstrap: bool) -> None:
    if os.geteuid() != 0:
        raise fail("needs root (debootstrap, chroot and mounts); run it with sudo.")
    missing = [
        (tool, package)
        for tool, package in [("unshare", "util-linux"), ("chroot", "coreutils")]
        + ([("debootstrap", "debootstrap")] if need_debootstrap else [])
        if not shutil.which(tool)
    ]
    if missing:
        raise fail(
            f"{', '.join(t for t, _ in missing)} not found: install it with "
            f"`apt-get install {' '.join(p for _, p in missing)}`."
        )


def make_root(root: Path, mirror: str) -> None:
    """Create the trixie root with debootstrap (into ROOT.partial, renamed when done)."""
    partial = root.with_name(root.name + ".partial")
    if partial.exists():
        mounts = Path("/proc/mounts").read_text().split()
        if any(m == str(partial) or m.startswith(f"{partial}/") for m in mounts):
            raise fail(f"{partial} has mounts left by an interrupted run; unmount them first.")
        shutil.rmtree(partial)
    partial.parent.mkdir(parents=True, exist_ok=True)
    command = debootstrap_command(partial, mirror)
    print(f"creating {root}: {' '.join(command)}", flush=True)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        log = partial / "debootstrap" / "debootstrap.log"
        detail = log.read_text(errors="replace") if log.is_file() else done.stderr
        raise fail(f"debootstrap failed ({mirror}):\n{(done.stdout + detail)[-3000:]}")
    partial.rename(root)


def prepare_root(root: Path) -> None:
    """Copy the host's name resolution (its name server, and /etc/hosts, which names the
    host: gloo, behind the multiprocess chapter, looks the host name up) and its local
    certificate authorities into the root."""
    for name in ("resolv.conf", "hosts"):
        if (Path("/etc") / name).is_file():
            target = root / "etc" / name
            target.unlink(missing_ok=True)  # it may be a dangling link
            target.write_text((Path("/etc") / name).read_text())
    local = Path("/usr/local/share/ca-certificates")
    cas = sorted(local.rglob("*.crt")) if local.is_dir() else []
    if cas:
        target = root / "usr" / "local" / "share" / "ca-certificates" / "host"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for i, ca in enumerate(cas):
            shutil.copyfile(ca, target / f"{i}-{ca.name}")
        run_inside(root, "update-ca-certificates", "--fresh")


def warnings_printed(nb: dict) -> list[str]:
    """Distinct ``...Warning: ...`` lines on the notebook's stderr, shortened."""
    found = []
    for line in printed(nb, "stderr"):
        match = re.search(r"\b\w*Warning: .*", ANSI.sub("", line))
        short = textwrap.shorten(match.group(0), 200) if match else ""
        if short and short not in found:
            found.append(short)
    return found


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--root",
        type=Path,
        default=default_root(),
        help="the Debian trixie root, created if absent (default: %(default)s)",
    )
    parser.add_argument(
        "--mirror", default=None, help="Debian mirror for debootstrap (default: the host's)"
    )
    notebook_runs.chapter_options(
        parser, keep="keep the work folder (venv, logs, executed notebooks)"
    )
    args = parser.parse_args(argv)
    args.root = args.root.expanduser().absolute()
    return args


def select_chapters(wanted: list[str] | None) -> list[str]:
    """The chapters to run, in the book's order (unknown names stop with the choices),
    each with its notebook."""
    chapters = notebook_runs.select_chapters(wanted, "check_jax_newest")
    missing = [c for c in chapters if not (notebooks.FOLDER / f"{c}.ipynb").is_file()]
    if missing:
        raise fail(f"no notebooks/{missing[0]}.ipynb; run `make notebooks`.")
    return chapters


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    chapters = select_chapters(args.chapters)
    root = args.root
    preflight(root, need_debootstrap=not root.exists())
    start = time.perf_counter()
    if not root.exists():
        make_root(root, args.mirror or host_mirror())
    if not (root / "usr" / "bin" / "python3").is_file():
        raise fail(f"{root} is not a Debian root with python3; delete it to have it made again.")
    prepare_root(root)

    with notebook_runs.work_folder("jaxguide-newest-", args.keep, root / "tmp") as tmp:
        at = "/" + str(tmp.relative_to(root))  # the same folder as seen inside the root
        print(f"newest-JAX check in {root}: {len(chapters)} chapters", flush=True)
        try:
            wheel = build_wheel(tmp / "dist")
        except (CommandFailed, FileNotFoundError) as err:
            raise fail(str(err)) from None
        run_inside(root, "python3", "-m", "venv", f"{at}/venv")
        python = f"{at}/venv/bin/python"
        pip = [python, "-m", "pip", "install", "--quiet", "--upgrade"]
        run_inside(root, *pip, f"{at}/dist/{wheel.name}", *NEWEST)
        (tmp / "versions.py").write_text(VERSIONS)
        v = json.loads(run_inside(root, python, f"{at}/versions.py", *SHOWN))
        print(
            f"Python {v['python']}: "
            + ", ".join(f"{name} {v[name]}" for name in SHOWN)
            + f" (the book is built with JAX {v['book']})"
        )
        print(f"environment ready in {time.perf_counter() - start:.0f} s", flush=True)

        for folder in ("work", "out", "logs"):
            (tmp / folder).mkdir()
        for name in chapters:  # only the notebooks in the kernel's folder
            shutil.copyfile(notebooks.FOLDER / f"{name}.ipynb", tmp / "work" / f"{name}.ipynb")
        notebook_runs.copy_runner(tmp)
        runs = [
            notebook_runs.Run(
                name,
                inside(
                    root,
                    notebook_runs.runner_command(
                        python,
                        f"{at}/{notebook_runs.RUNNER_NAME}",
                        f"{at}/work/{name}.ipynb",
                        f"{at}/out/{name}.ipynb",
                        f"{at}/work",
                        timeout=CELL_TIMEOUT,
                        installed=True,
                    ),
                ),
                notebook_runs.ipynb_code_bytes(tmp / "work" / f"{name}.ipynb"),
                {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},  # the host's, for unshare
            )
            for name in chapters
        ]
        failed, differ = [], []
        for ended in notebook_runs.run_longest_first(runs, tmp / "logs", args.parallel):
            name = ended.name
            verdict = (
                "pass" if ended.returncode == 0 else f"FAIL  {notebook_runs.error_line(ended.log)}"
            )
            print(f"  {name:<14} {ended.seconds:6.0f} s  {verdict}", flush=True)
            executed = tmp / "out" / f"{name}.ipynb"
            nb = json.loads(executed.read_text()) if executed.is_file() else {}
            claims = failed_claims(printed(nb))
            for line in claims:
                print(f"      differs from the book's build: {line}")
            for line in warnings_printed(nb):
                print(f"      warning: {line}")
            failed += [name] if ended.returncode else []
            differ += [name] if claims else []

        failed.sort(key=chapters.index)
        differ.sort(key=chapters.index)
        print(
            f"jax {v['jax']} (Python {v['python']}): {len(chapters) - len(failed)} of "
            f"{len(chapters)} chapters pass"
            + (f"; failed: {', '.join(failed)}" if failed else "")
            + (f"; claims differ in: {', '.join(differ)}" if differ else "")
            + f"; {time.perf_counter() - start:.0f} s in all"
        )
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
