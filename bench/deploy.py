"""The throwaway deployments Momor is measured on: governed (its own PostgreSQL database, a
Redis DB index, a Celery worker) and plain (embedded mode: a SQLite file and a journal
directory of its own, no Redis, no worker), each with a catalog pointing at the fake upstream
and an organization and a key with a credit limit and a rate limit; the fake upstream, and the
gateways under test."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.procs import Proc, Procs, free_port, wait_http, wait_line

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"
MODEL = "bench/fast"  # the model id clients ask for
UPSTREAM_ID = "fast"  # the fake's model id, what the gateways send on
EMBED_MODEL = "bench/embed"  # the embedding model measured beside the chat calls
EMBED_UPSTREAM_ID = "embed"
MESSAGES_MODEL = "bench/claude"  # the model a Messages call asks for, served by Anthropic
MESSAGES_UPSTREAM_ID = "claude-fast"
RESPONSES_MODEL = "bench/gpt"  # the model a Responses call asks for, served by OpenAI
RESPONSES_UPSTREAM_ID = "gpt-fast"
ANTHROPIC_PATH = "/anthropic"  # where the fake speaks Anthropic's API, below its base URL
CHUNKS = 20
ANSWER = " ".join(f"w{i:02d}" for i in range(CHUNKS))  # 20 pieces of text
FAKE_KEY_ENV = "MOMOR_PROVIDER_KEY_BENCH"
# What makes a deployment governed (with MOMOR_ and DJANGO_ variables, never handed to the
# plain one): the stores and the broker, and Celery's own settings.
GOVERNED_ENV = ("DATABASE_URL", "REDIS_URL", "CELERY_", "MOMOR_", "DJANGO_")

CATALOG = f"""
[[providers]]
name = "benchfake"
display_name = "Benchmark fake upstream"
api = "openai_compatible"
base_url = "{{base_url}}"
key_env = "{FAKE_KEY_ENV}"
zdr = true

[[models]]
id = "{MODEL}"
released = 2025-01-01
tiers = ["high"]
auto = true

[[offerings]]
model = "{MODEL}"
provider = "benchfake"
upstream_id = "{UPSTREAM_ID}"
prompt_price = 0.01
completion_price = 0.01
"""
# Loaded with CATALOG where the deployment's code knows a model's kind (a --baseline of a ref
# from before embeddings does not, and is measured on chat calls alone).
EMBEDDINGS_CATALOG = f"""
[[models]]
id = "{EMBED_MODEL}"
kind = "embedding"
released = 2025-01-01

[[offerings]]
model = "{EMBED_MODEL}"
provider = "benchfake"
upstream_id = "{EMBED_UPSTREAM_ID}"
prompt_price = 0.01
"""


def native_catalog(provider: str, display_name: str, api: str, model: str, upstream_id: str) -> str:
    """A provider of API `api` at the fake (its `{base_url}` left to fill) serving `model`
    alone: an offering that takes that API's calls natively."""
    return f"""
[[providers]]
name = "{provider}"
display_name = "{display_name}"
api = "{api}"
base_url = "{{base_url}}"
key_env = "{FAKE_KEY_ENV}"
zdr = true

[[models]]
id = "{model}"
released = 2025-01-01

[[offerings]]
model = "{model}"
provider = "{provider}"
upstream_id = "{upstream_id}"
prompt_price = 0.01
completion_price = 0.01
"""


# Loaded with EMBEDDINGS_CATALOG: a model served by an Anthropic offering, which a Messages
# call reaches natively, and one served by an OpenAI offering, which a Responses call does.
MESSAGES_CATALOG = native_catalog(
    "benchclaude", "Benchmark fake Anthropic", "anthropic", MESSAGES_MODEL, MESSAGES_UPSTREAM_ID
)
RESPONSES_CATALOG = native_catalog(
    "benchopenai", "Benchmark fake OpenAI", "openai", RESPONSES_MODEL, RESPONSES_UPSTREAM_ID
)
# A checkout without it (a --baseline from before the Messages route) is measured without
# Messages calls.
MESSAGES_ROUTE = Path("gateway") / "edge" / "messages.py"
# The same for the Responses route and Responses calls.
RESPONSES_ROUTE = Path("gateway") / "edge" / "responses.py"


def catalog_text(fake_url: str, *, chat_alone: bool = False) -> str:
    """The catalog a deployment loads, its providers at the fake upstream `fake_url`."""
    openai = f"{fake_url}/v1"
    chat = CATALOG.format(base_url=openai)
    if chat_alone:
        return chat
    messages = MESSAGES_CATALOG.format(base_url=f"{fake_url}{ANTHROPIC_PATH}")
    return chat + EMBEDDINGS_CATALOG + messages + RESPONSES_CATALOG.format(base_url=openai)


@dataclass(frozen=True)
class Settings:
    database: str = "momor_bench"
    redis_db: int = 14
    org: str = "bench"
    rate_limit: int = 10_000_000
    root: Path = ROOT  # the checkout Momor runs from (another one for a --baseline section)


def _psql(sql: str) -> None:
    subprocess.run(  # noqa: S603 - fixed argv
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-q", "-c", sql],  # noqa: S607 - psql, redis-cli, git and tar from PATH
        check=True, capture_output=True,
    )  # fmt: skip


def _redis_flush(db: int) -> None:
    subprocess.run(  # noqa: S603 - argv written here, no shell
        ["redis-cli", "-h", "127.0.0.1", "-n", str(db), "FLUSHDB"],  # noqa: S607 - psql, redis-cli, git and tar from PATH
        check=True, capture_output=True,
    )  # fmt: skip


def redis_len(db: int, key: str, command: str = "LLEN") -> int:
    """The length of a list (LLEN) or a stream (XLEN)."""
    out = subprocess.run(  # noqa: S603 - argv written here, no shell
        ["redis-cli", "-h", "127.0.0.1", "-n", str(db), command, key],  # noqa: S607 - psql, redis-cli, git and tar from PATH
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return int(out.stdout.strip() or 0)


def records_backlog(db: int) -> int:
    """Records in every records stream, not yet stored."""
    from core.redis_keys import records_streams

    return sum(redis_len(db, stream, "XLEN") for stream in records_streams())


def psql_value(database: str, sql: str) -> str:
    """The rows of `sql` on `database`, whitespace-joined (or psql's error)."""
    out = subprocess.run(  # noqa: S603 - argv written here, no shell
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", database, "-tA", "-c", sql],  # noqa: S607 - psql, redis-cli, git and tar from PATH
        capture_output=True, text=True,
    )  # fmt: skip
    return " ".join(out.stdout.split()) or out.stderr.strip()


def base_env(settings: Settings) -> dict[str, str]:
    """Momor's environment common to both deployments: this process's, without any store,
    broker or Momor setting of its own, and the bench's secrets and limits."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(GOVERNED_ENV)}
    env.update(
        MOMOR_SECRET_KEY="bench-secret-key-not-for-production",  # noqa: S106 - throwaway
        MOMOR_ENCRYPTION_KEY="bench-encryption-key",
        MOMOR_RATE_LIMIT_PER_MINUTE=str(settings.rate_limit),
        MOMOR_LOG_LEVEL="WARNING",
        MOMOR_SECURE_COOKIES="0",
        PYTHONUNBUFFERED="1",
        **{FAKE_KEY_ENV: "sk-bench-fake"},
    )
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
    if settings.root != ROOT:  # ahead of the editable install of this checkout
        env["PYTHONPATH"] = str(settings.root)
    return env


class Deployment:
    """Momor's environment and the state it needs; `teardown` drops what `setup` made."""

    kind = "governed"

    def __init__(self, settings: Settings, fake_url: str, log_dir: Path) -> None:
        self.settings = settings
        self.fake_url = fake_url
        self.log_dir = log_dir
        self.key = ""
        self.embeddings = False  # its catalog serves EMBED_MODEL
        self.messages = False  # its catalog serves MESSAGES_MODEL, and its code the route
        self.responses = False  # its catalog serves RESPONSES_MODEL, and its code the route
        self.worker: Proc | None = None
        self.env = self._env()

    def _env(self) -> dict[str, str]:
        s = self.settings
        return base_env(s) | {
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{s.database}",
            "REDIS_URL": f"redis://127.0.0.1:6379/{s.redis_db}",
        }

    @property
    def root(self) -> Path:
        return self.settings.root

    def setup(self) -> None:
        s = self.settings
        _psql(f"DROP DATABASE IF EXISTS {s.database} WITH (FORCE)")
        _psql(f"CREATE DATABASE {s.database}")
        _redis_flush(s.redis_db)
        self.populate()

    def populate(self) -> None:
        """The schema, the catalog, the organization and its key (`self.key`)."""
        s = self.settings
        self.manage("migrate", "--noinput", "-v", "0")
        catalog = self.log_dir / "catalog.toml"
        catalog.write_text(catalog_text(self.fake_url))
        try:
            self.manage("load_catalog", str(catalog))
            self.embeddings = True
            self.messages = (self.root / MESSAGES_ROUTE).exists()
            self.responses = (self.root / RESPONSES_ROUTE).exists()
        except RuntimeError:  # code from before embeddings: the chat model alone
            print(f"    {self.root.name}: no embedding model loads; chat calls alone", flush=True)
            catalog.write_text(catalog_text(self.fake_url, chat_alone=True))
            self.manage("load_catalog", str(catalog))
        self.manage("create_org", s.org, "--credits", "100000000")
        self.key = self.manage(
            "create_api_key", "--org", s.org, "--name", "bench",
            "--credit-limit", "50000000", "--rate-limit", str(s.rate_limit),
        ).strip()  # fmt: skip

    def org_with_key(self, slug: str, credits: str, rate_limit: int | None = None) -> str:
        """Another organization with `credits` USD and a key of its own (with its own rate
        limit when given); returns the key. Gateways started after this know them."""
        self.manage("create_org", slug, "--credits", credits)
        args = ["create_api_key", "--org", slug, "--name", f"{slug}-calls"]
        if rate_limit is not None:
            args += ["--rate-limit", str(rate_limit)]
        return self.manage(*args).strip()

    def management_key(self, slug: str) -> str:
        """A management key (the credits API) of organization `slug`."""
        key = self.manage("create_api_key", "--org", slug, "--name", f"{slug}-manage").strip()
        code = (
            "from accounts.models import ApiKey, KeyKind; ApiKey.objects.filter("
            f"organization__slug={slug!r}, name={slug + '-manage'!r})"
            ".update(kind=KeyKind.MANAGEMENT)"
        )
        self.manage("shell", "-c", code)
        return key

    def teardown(self) -> None:
        _psql(f"DROP DATABASE IF EXISTS {self.settings.database} WITH (FORCE)")
        _redis_flush(self.settings.redis_db)

    def manage(self, *args: str) -> str:
        return self.python("manage.py", *args)

    def python(self, *args: str) -> str:
        """Python run from the deployment's checkout in its environment (`manage.py ...`,
        `-m bench.seed ...`); what it printed."""
        out = subprocess.run(  # noqa: S603 - argv written here, no shell
            [str(VENV_BIN / "python"), *args],
            cwd=self.root, env=self.env, capture_output=True, text=True,
        )  # fmt: skip
        if out.returncode:
            raise RuntimeError(f"python {' '.join(args)} failed:\n{out.stderr[-3000:]}")
        return out.stdout

    def start_worker(self, procs: Procs, core: int) -> Proc:
        argv = [str(VENV_BIN / "celery"), "-A", "momor", "worker", "-l", "warning"]
        argv += ["--concurrency", "1", "--without-gossip", "--without-mingle"]
        name = "celery" if self.root == ROOT else f"celery-{self.root.name}"
        self.worker = procs.start(name, argv, core=core, env=self.env, cwd=self.root)
        return self.worker


class EmbeddedDeployment(Deployment):
    """Momor on its embedded defaults, as the quickstart runs it: a SQLite file and a journal
    directory under `log_dir` (admission counters in each process, records through the
    journal), no Redis, no Celery worker. Nothing of the governed deployment's environment
    reaches it."""

    kind = "embedded"

    @property
    def sqlite(self) -> Path:
        return self.log_dir / "momor.sqlite3"

    @property
    def journal(self) -> Path:
        return self.log_dir / "journal"

    def _env(self) -> dict[str, str]:
        return base_env(self.settings) | {
            "DATABASE_URL": f"sqlite:///{self.sqlite}",
            "MOMOR_JOURNAL_DIR": str(self.journal),
        }

    def setup(self) -> None:
        self.teardown()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.journal.mkdir()
        self.populate()

    def teardown(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):  # the file and SQLite's companions
            Path(f"{self.sqlite}{suffix}").unlink(missing_ok=True)
        shutil.rmtree(self.journal, ignore_errors=True)

    def start_worker(self, procs: Procs, core: int) -> Proc:
        raise RuntimeError("the embedded deployment runs no Celery worker")

    def generations_by_status(self) -> str:
        """The stored generations by status (`served=1234 ...`), read from the SQLite file."""
        sql = "SELECT status, count(*) FROM billing_generation GROUP BY status ORDER BY status"
        with contextlib.closing(sqlite3.connect(f"file:{self.sqlite}?mode=ro", uri=True)) as db:
            return " ".join(f"{status}={n}" for status, n in db.execute(sql))

    def journal_backlog(self) -> int:
        """Records left in the journal's segments, not yet stored."""
        left = 0
        for path in self.journal.glob("*.journal"):
            with contextlib.suppress(FileNotFoundError):  # applied and deleted meanwhile
                left += len(path.read_bytes().splitlines())
        return left


SERVERS = ("daphne", "uvicorn", "uvicorn-uvloop", "granian")


def server_argv(server: str, port: int, access_log: bool) -> list[str]:
    app = "momor.asgi:application"
    if server == "daphne":
        return [str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port)] + (
            [] if access_log else ["-v", "0"]
        ) + [app]  # fmt: skip
    if server.startswith("uvicorn"):
        argv = [str(VENV_BIN / "uvicorn"), app, "--host", "127.0.0.1", "--port", str(port)]
        argv += ["--workers", "1", "--log-level", "warning"]
        if server.endswith("uvloop"):  # as docs/operations.md, "6. The gateway processes", runs it
            argv += ["--loop", "uvloop", "--http", "httptools", "--ws-max-size", "4096"]
        else:
            argv += ["--loop", "asyncio"]
        return argv if access_log else [*argv, "--no-access-log"]
    if server == "granian":
        argv = [str(VENV_BIN / "granian"), "--interface", "asgi", "--host", "127.0.0.1"]
        argv += ["--port", str(port), "--workers", "1", "--log-level", "warning"]
        return [*argv, "--access-log", app] if access_log else [*argv, app]
    raise ValueError(f"unknown server {server}")


def server_available(server: str) -> str | None:
    """Why `server` cannot run here, or None."""
    if server == "granian" and not (VENV_BIN / "granian").exists():
        return "granian is not installed in .venv"
    if server == "uvicorn-uvloop":
        found = subprocess.run(  # noqa: S603 - argv written here, no shell
            [str(VENV_BIN / "python"), "-c", "import uvloop"], capture_output=True
        )
        if found.returncode:
            return "uvloop is not installed in .venv"
    if server.startswith("uvicorn") and not (VENV_BIN / "uvicorn").exists():
        return "uvicorn is not installed in .venv"
    return None


def start_momor(
    procs: Procs, deployment: Deployment, server: str, core: int, log: bool,
    name: str = "", env: dict[str, str] | None = None, nice: int = 0, traced: bool = False,
) -> tuple[Proc, str]:  # fmt: skip
    """Momor under `server`, one process on `core` (`env` added to the deployment's, at
    `nice`, under `bench.traced` when `traced`); returns it and its base URL."""
    port = free_port()
    argv = server_argv(server, port, log)
    if traced:
        argv = [str(VENV_BIN / "python"), "-m", "bench.traced", *argv]
    if nice:
        argv = ["nice", "-n", str(nice), *argv]
    full_env = {**deployment.env, **(env or {})}
    if deployment.kind == "embedded":
        _check_embedded(full_env)
    proc = procs.start(
        name or f"momor-{server}", argv, core=core, env=full_env, cwd=deployment.root
    )
    # GET on the completions route answers 405 once Django serves (a cheap readiness check).
    wait_http(proc, f"http://127.0.0.1:{port}/v1/chat/completions", timeout=60, ok=(405,))
    return proc, f"http://127.0.0.1:{port}/v1"


# The governed deployment's stores, broker and journal: what a plain section's extra
# environment (--momor-env) is stripped of.
STORE_ENV = (
    "DATABASE_URL", "REDIS_URL", "MOMOR_BROKER_URL", "MOMOR_CACHE_REDIS_URL", "MOMOR_JOURNAL_DIR",
)  # fmt: skip


def embedded_extra(pairs: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """`pairs` without the settings that would take the embedded deployment off SQLite and its
    own journal or onto Redis."""
    return tuple((k, v) for k, v in pairs if k not in STORE_ENV and not k.startswith("CELERY_"))


def _check_embedded(env: dict[str, str]) -> None:
    leaked = [k for k in ("REDIS_URL", "MOMOR_BROKER_URL", "MOMOR_CACHE_REDIS_URL") if k in env]
    if leaked or not env.get("DATABASE_URL", "").startswith("sqlite:"):
        raise RuntimeError(f"the embedded deployment's environment is not embedded: {leaked}")


def start_floor(procs: Procs, fake_url: str, core: int) -> tuple[Proc, str]:
    """The bare pass-through proxy (bench/floor.py) in front of the fake, on `core`."""
    port = free_port()
    argv = [str(VENV_BIN / "python"), "-m", "bench.floor", "--port", str(port)]
    argv += ["--upstream", f"{fake_url}/v1"]
    proc = procs.start("floor", argv, core=core, env=dict(os.environ), cwd=ROOT)
    wait_http(proc, f"http://127.0.0.1:{port}/v1/chat/completions", timeout=30, ok=(405,))
    return proc, f"http://127.0.0.1:{port}/v1"


def start_fake(procs: Procs, core: int, port: int) -> tuple[Proc, str]:
    argv = [str(VENV_BIN / "python"), "-m", "testkit.fake_upstream"]
    argv += ["--port", str(port), "--max-records", "16"]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = procs.start("fake-upstream", argv, core=core, env=env, cwd=ROOT)
    url = wait_line(proc, "listening on ", timeout=30).removeprefix("listening on ").strip()
    script_fake(url)
    return proc, url


def script_fake(url: str) -> None:
    """The fake upstream at `url` told to answer the chat, Messages and Responses models with
    ANSWER, in CHUNKS pieces when streamed."""
    for model in (UPSTREAM_ID, MESSAGES_UPSTREAM_ID, RESPONSES_UPSTREAM_ID):
        script = {"model": model, "text": ANSWER, "chunks": CHUNKS}
        httpx.post(f"{url}/_fake/script", json=script, timeout=5).raise_for_status()


BASELINES = ROOT / "bench" / ".baselines"


def baseline_checkout(ref: str) -> tuple[str, Path]:
    """The tree of git `ref` (a commit, branch or tag of this repository), extracted once into
    bench/.baselines/<commit>; returns the short commit and the folder. It runs on this
    checkout's .venv, so its dependencies must be ones this checkout installs."""
    commit = subprocess.run(  # noqa: S603 - argv written here, no shell
        ["git", "rev-parse", "--verify", f"{ref}^{{commit}}"],  # noqa: S607 - psql, redis-cli, git and tar from PATH
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    folder = BASELINES / commit[:12]
    if not (folder / "manage.py").exists():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(  # noqa: S603 - argv written here, no shell
            ["git", "archive", "--format=tar", commit],  # noqa: S607 - psql, redis-cli, git and tar from PATH
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        subprocess.run(  # noqa: S603 - argv written here, no shell
            ["tar", "-x", "-C", str(folder)],  # noqa: S607 - psql, redis-cli, git and tar from PATH
            input=archive.stdout,
            check=True,
        )
    return commit[:12], folder
