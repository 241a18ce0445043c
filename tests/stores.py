"""Redis and PostgreSQL servers a test owns: started on free ports in temporary directories,
stopped, killed, frozen and started again by the test, never the machine's shared ones."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import redis


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def wait_until(predicate: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class RedisServer:
    """A redis-server of the test's own; `durable` turns on the append-only file, synced on
    every write, as a deployment that must not lose records runs it."""

    def __init__(self, *, durable: bool = True) -> None:
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="momor-redis-"))
        self.durable = durable
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Started on its port; on its first start, a port taken meanwhile (a free port can be
        handed to another socket before redis-server binds it) is traded for another."""
        first = self.process is None
        for _ in range(5):
            if self._started():
                return
            if not first:
                break
            self.port = free_port()
        log = (self.directory / "redis.log").read_text(errors="replace")[-2000:]
        raise AssertionError(f"Redis did not start on port {self.port}: {log}")

    def _started(self) -> bool:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--dir", str(self.directory), "--save", "", "--daemonize", "no"]
        command += ["--appendonly", "yes" if self.durable else "no", "--appendfsync", "always"]
        with (self.directory / "redis.log").open("ab") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603 - redis-server, argv written here
        self.process = process
        client = redis.Redis(port=self.port, socket_timeout=1, socket_connect_timeout=1)

        def answered() -> bool:
            return process.poll() is not None or _pings(client)

        wait_until(answered, 30, f"Redis on port {self.port}")
        return process.poll() is None

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=5, socket_connect_timeout=5)

    def kill(self) -> None:
        """SIGKILL: what was acknowledged is in the append-only file."""
        self._signal(signal.SIGKILL)
        assert self.process is not None
        self.process.wait(10)

    def freeze(self) -> None:
        """SIGSTOP: connections are accepted by the kernel and never answered."""
        self._signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self._signal(signal.SIGCONT)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.thaw()
            self.kill()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(sig)


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


class PostgresServer:
    """A PostgreSQL cluster of the test's own (initdb and pg_ctl, run as the `postgres` user
    when the tests run as root, since PostgreSQL refuses to run as root)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="momor-pg-"))
        self.data = self.directory / "data"
        self._bin = _postgres_bin()
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.directory, owner.pw_uid, owner.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.directory / "postgres.log")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """`fast` rolls back open transactions and disconnects everyone; `immediate` is a
        crash (the server recovers from its log on the next start)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def create_database(self, name: str) -> None:
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def close(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        command = [str(self._bin / program), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)  # noqa: S603 - PostgreSQL's own tools, argv written here


def _postgres_bin() -> Path:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    if not versions:
        raise RuntimeError("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")
    return versions[-1]


class RabbitMQServer:
    """A RabbitMQ node of the test's own (Debian's rabbitmq-server run as the test's user, its
    database, logs and Erlang cookie in a temporary directory, listening on loopback ports)."""

    def __init__(self) -> None:
        self.port, self.dist_port = free_port(), free_port()
        self.node = f"momor-test-{self.port}@localhost"
        self.directory = Path(tempfile.mkdtemp(prefix="momor-rabbitmq-"))
        (self.directory / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\nloopback_users = none\n"
        )
        (self.directory / "enabled_plugins").write_text("[].\n")
        for sub in ("mnesia", "log"):
            (self.directory / sub).mkdir()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}//"

    def start(self, timeout: float = 120) -> None:
        base = str(self.directory)
        env = {
            **os.environ, "HOME": base, "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_NODE_PORT": str(self.port), "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_BASE": base, "RABBITMQ_MNESIA_BASE": f"{base}/mnesia",
            "RABBITMQ_LOG_BASE": f"{base}/log", "RABBITMQ_CONFIG_FILE": f"{base}/rabbitmq.conf",
            "RABBITMQ_ENABLED_PLUGINS_FILE": f"{base}/enabled_plugins",
            "RABBITMQ_CONF_ENV_FILE": f"{base}/rabbitmq-env.conf",
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
        }  # fmt: skip
        log = (self.directory / "server.log").open("ab")
        self.process = subprocess.Popen(  # noqa: S603 - the RabbitMQ server, no arguments
            [_RABBITMQ_SERVER], cwd=base, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        wait_until(self._accepts, timeout, f"RabbitMQ on port {self.port}")

    def kill(self) -> None:
        """SIGKILL to the node's whole process group: what it confirmed is on its disk."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()
        shutil.rmtree(self.directory, ignore_errors=True)

    def queues(self) -> list[tuple[str, ...]]:
        """Each queue's name, type, durability and ready messages, as rabbitmqctl lists them."""
        done = subprocess.run(  # noqa: S603 - rabbitmqctl, argv written here
            [_RABBITMQCTL, "-n", self.node, "-q", "list_queues", "name", "type", "durable",
             "messages_ready", "--no-table-headers"],
            env={**os.environ, "HOME": str(self.directory)}, capture_output=True, text=True,
            check=True, timeout=60,
        )  # fmt: skip
        return sorted(tuple(line.split()) for line in done.stdout.splitlines() if line.strip())

    def _accepts(self) -> bool:
        import kombu

        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"RabbitMQ exited; see {self.directory}/server.log")
        try:
            with kombu.Connection(self.url, connect_timeout=1) as connection:
                connection.connect()
        except Exception:
            return False
        return True


# Debian's /usr/sbin wrapper would switch to the rabbitmq user, which cannot reach the test's
# directory; the script it wraps runs as anyone.
_RABBITMQ_SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
_RABBITMQCTL = "/usr/lib/rabbitmq/bin/rabbitmqctl"
