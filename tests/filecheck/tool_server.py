"""A fork server for the tools lit's RUN lines start (`tdsl-opt`, `tdsl-run`, `xdsl-opt`).

Each tool spends about a second importing xDSL and tdsl (hundreds of IRDL op
definitions and assembly formats) and a few tens of milliseconds on the test's
input, and lit starts some three hundred of them.  lit.cfg starts this server
once: it imports the tools' modules, listens on a Unix socket, and forks a
child for each run.  The child takes over the caller's standard input, output
and error (passed as file descriptors), its working directory, environment and
arguments, runs the tool's ``main`` as its console script would, and reports the
exit status.  Every run starts from the same freshly imported state, as a new
process would; only the import is shared.  (Java's nailgun and Android's zygote
work the same way.)

The client is a small script lit.cfg writes for each tool into a folder put
first on the tests' PATH; it imports only this file, without site-packages::

    #!/path/to/venv/bin/python -S
    import sys
    sys.path.insert(0, "/path/to/tests/filecheck")
    from tool_server import client
    sys.exit(client("/tmp/.../server.sock", "tdsl-opt", sys.argv[1:], "/path/to/venv/bin/tdsl-opt"))

It falls back to the tool's own console script when the server cannot be
reached, so a RUN line never depends on the server to pass.  Set
``TDSL_LIT_FORK_SERVER=0`` to run every tool as its own process.

Usage: ``python tool_server.py SOCKET FOLDER`` (the server; it exits when its parent,
lit, does) or, as the clients do, ``client(SOCKET, TOOL, ARGS, FALLBACK)``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

TOOLS = {
    "tdsl-opt": ("tdsl.tools.tdsl_opt", "main"),
    "tdsl-run": ("tdsl.tools.tdsl_run", "main"),
    "xdsl-opt": ("xdsl.tools.xdsl_opt", "main"),
}
"""Each tool the server runs, as its console script's module and function."""

_STATUS = struct.Struct("!i")


def _recv_request(conn: socket.socket) -> tuple[dict[str, object], list[int]]:
    """One request: a JSON header (length-prefixed) and the caller's three fds."""
    size_bytes, fds, _flags, _addr = socket.recv_fds(conn, 4, 3)
    (size,) = struct.unpack("!I", size_bytes)
    payload = b""
    while len(payload) < size:
        chunk = conn.recv(size - len(payload))
        if not chunk:
            raise EOFError("the client went away mid-request")
        payload += chunk
    return json.loads(payload), fds


def _run_child(conn: socket.socket, request: dict[str, object], fds: list[int]) -> None:
    """In the forked child: become the caller's tool run, then report its status."""
    import io

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=os.isatty(1)
    )
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
    )
    os.chdir(str(request["cwd"]))
    os.environ.clear()
    os.environ.update(request["env"])  # type: ignore[arg-type]
    argv = [str(arg) for arg in request["argv"]]  # type: ignore[union-attr]
    sys.argv = argv
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as CPython sets it at start-up
    status = 1
    try:
        module_name, function = TOOLS[argv[0]]
        module = sys.modules[module_name]
        status = _exit_status(getattr(module, function)())
    except SystemExit as exit_:
        status = _exit_status(exit_.code)
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = status or 120  # CPython's status when flushing stdout fails at exit
    try:
        conn.sendall(_STATUS.pack(status))
    finally:
        os._exit(status)


def _exit_status(code: object) -> int:
    """The status `sys.exit(code)` gives a process (None: 0, an int: itself, else: 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def serve(path: str, folder: str) -> None:
    """Import the tools, listen on `path`, and fork a child per request until lit exits.

    On exit it removes `folder` (the socket's and the clients' folder).
    """
    import importlib
    import shutil

    for module_name, _function in TOOLS.values():
        importlib.import_module(module_name)
    parent = os.getppid()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:  # (from here on, a SIGTERM, even right after "ready", removes the folder)
        signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(0))  # lit's atexit
        listener.bind(path)
        listener.listen(64)
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        while os.getppid() == parent:
            ready, _, _ = select.select([listener], [], [], 1.0)
            if not ready:
                continue
            conn, _ = listener.accept()
            try:
                request, fds = _recv_request(conn)
            except (OSError, EOFError, ValueError):
                conn.close()
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                listener.close()
                _run_child(conn, request, fds)
            for fd in fds:
                os.close(fd)
            conn.close()
    finally:
        listener.close()
        shutil.rmtree(folder, ignore_errors=True)


def client(path: str, tool: str, args: list[str], fallback: str) -> int:
    """Run `tool args` in the server at `path`, or exec `fallback` if it cannot be reached."""
    if os.environ.get("TDSL_LIT_FORK_SERVER", "1") != "0":
        try:
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(path)
        except OSError:
            pass
        else:
            header = json.dumps(
                {"argv": [tool, *args], "cwd": os.getcwd(), "env": dict(os.environ)}
            ).encode()
            socket.send_fds(conn, [struct.pack("!I", len(header))], [0, 1, 2])
            conn.sendall(header)
            reply = b""
            while len(reply) < _STATUS.size:
                chunk = conn.recv(_STATUS.size - len(reply))
                if not chunk:
                    # The child died without reporting (a signal): say so as a shell would.
                    sys.stderr.write(f"{tool}: the tool's process died without an exit status\n")
                    return 134
                reply += chunk
            return _STATUS.unpack(reply)[0]
    os.execv(fallback, [fallback, *args])
    return 127  # not reached


def start(tools: dict[str, str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str] | None:
    """Start a server for `tools` (each tool's name and console script) in environment
    `env`, and write a client for each into a new folder; return the server and the
    folder, to be put first on PATH, or None if the server did not start.

    The server runs on the Python of the first tool's script (its ``#!`` line), and
    removes the folder when it exits: when the process that started it does, or on
    SIGTERM."""
    import subprocess
    import tempfile

    with open(next(iter(tools.values()))) as script:
        first = script.readline()
    python = first[2:].strip() if first.startswith("#!") else sys.executable
    here = os.path.dirname(os.path.abspath(__file__))
    folder = tempfile.mkdtemp(prefix="tdsl-lit-tools-")
    socket_path = os.path.join(folder, "server.sock")
    server = subprocess.Popen(
        [python, os.path.join(here, "tool_server.py"), socket_path, folder],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    ready = server.stdout.readline().strip() == "ready"
    server.stdout.close()  # the server writes nothing more
    if not ready:
        server.terminate()
        server.wait()
        return None
    for tool, fallback in tools.items():
        shim = os.path.join(folder, tool)
        with open(shim, "w") as out:
            out.write(
                f"#!{python} -S\n"
                "import sys\n"
                f"sys.path.insert(0, {here!r})\n"
                "from tool_server import client\n"
                f"sys.exit(client({socket_path!r}, {tool!r}, sys.argv[1:], {fallback!r}))\n"
            )
        os.chmod(shim, 0o755)
    return server, folder


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
