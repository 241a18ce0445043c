"""`bash scripts/quickstart.sh` as a new user runs it, in a copy of the checkout (its `var/` is
its own): the operator commands run against it through `scripts/manage.sh`, whatever the shell
around them holds; a second run keeps what the operator changed; and `/readyz` says there is no
Redis to check."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from testkit.fake_embeddings import embedding_vector
from tests.real_server import free_port
from tests.webhook_receiver import Receiver

ROOT = Path(__file__).resolve().parents[1]
LEFT_OUT = ("tests/", "docs/", "bench/", "spec/")
STARTS_WITHIN = 300.0


def _copy_checkout(to: Path) -> None:
    """The checkout's files, with the project's .venv and node_modules reused: a .venv of its
    own whose parts link to the real one, so the quickstart installs nothing."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],  # noqa: S607 - git from PATH
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    for name in listed:
        if name.startswith(LEFT_OUT) or not (ROOT / name).is_file():
            continue
        (to / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, to / name)
    venv = to / ".venv"
    venv.mkdir()
    for part in (ROOT / ".venv").iterdir():
        if not part.name.startswith(".momor-installed"):
            (venv / part.name).symlink_to(part)
    (venv / ".momor-installed-fake").touch()
    (to / "node_modules").symlink_to(ROOT / "node_modules")


class Quickstart:
    def __init__(self, checkout: Path) -> None:
        self.checkout = checkout
        self.runs = 0

    @contextmanager
    def serving(self) -> Iterator[str]:
        """The quickstart run until it serves, on ports of its own (a run stopping is never
        mistaken for the next one serving); stopped, with the fake upstream, after."""
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MOMOR_")}
        env |= {"MOMOR_PORT": str(port), "MOMOR_DEMO_UPSTREAM_PORT": str(free_port())}
        log = (self.checkout / f"quickstart-{self.runs}.log").open("wb")
        self.runs += 1
        process = subprocess.Popen(
            ["bash", "scripts/quickstart.sh"],  # noqa: S607 - bash from PATH
            cwd=self.checkout, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            url = f"http://127.0.0.1:{port}"
            self._wait_serving(process, url, log.name)
            yield url
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)
            _wait_group_gone(process.pid)
            log.close()

    def _wait_serving(self, process: subprocess.Popen[bytes], url: str, log: str) -> None:
        deadline = time.monotonic() + STARTS_WITHIN
        while time.monotonic() < deadline:
            assert process.poll() is None, Path(log).read_text(errors="replace")
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"the quickstart never served: {Path(log).read_text()[-2000:]}")

    def ran(self) -> Quickstart:
        """After its first run (the tests may run alone)."""
        if self.runs == 0:
            with self.serving():
                pass
        return self

    def manage(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """`bash scripts/manage.sh ARGS`, as the README says, from a shell whose environment
        names other stores and another secret key (the test's own)."""
        return subprocess.run(  # noqa: S603 - our own script, with arguments written here
            ["bash", str(self.checkout / "scripts" / "manage.sh"), *args],  # noqa: S607 - bash from PATH
            cwd=cwd or self.checkout, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    def shell(self, code: str) -> str:
        done = self.manage("shell", "-v", "0", "-c", code)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()


def _wait_group_gone(group: int) -> None:
    """Until every process the run started (the server, the fake upstream) has exited, so
    the next run starts against a database no one else holds."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.killpg(group, signal.SIGKILL)


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Quickstart:
    checkout = tmp_path_factory.mktemp("checkout")
    _copy_checkout(checkout)
    return Quickstart(checkout)


def test_readyz_says_there_is_no_redis_to_check(quickstart: Quickstart) -> None:
    with quickstart.serving() as url:
        deadline = time.monotonic() + 30
        response = httpx.get(url + "/readyz", timeout=10)
        while response.status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.2)  # the first probe starts loading the catalog
            response = httpx.get(url + "/readyz", timeout=10)
    assert response.json() == {
        "status": "ready",
        "checks": {"catalog": "ok", "database": "ok", "redis": "not used", "handoffs": "ok"},
    }


def test_operator_commands_run_against_the_quickstart(
    quickstart: Quickstart, tmp_path: Path
) -> None:
    quickstart.ran()
    made = quickstart.manage("create_org", "acme", "--credits", "5", cwd=tmp_path)
    assert (made.returncode, made.stderr) == (0, "")
    key = quickstart.manage("create_api_key", "--org", "acme", "--name", "ci")
    assert key.returncode == 0, key.stderr
    assert key.stdout.startswith("sk-momor-")
    found = "from accounts.models import ApiKey as K; print(K.objects.get(name='ci').prefix)"
    assert key.stdout.startswith(quickstart.shell(found))


def test_a_second_run_keeps_what_the_operator_changed(quickstart: Quickstart) -> None:
    quickstart.ran()
    rows = "from gateway.models import Provider as P; "
    quickstart.shell(
        rows + "P.objects.filter(name='demo').update(display_name='Our demo', zdr=False); "
        "P.objects.filter(name='openai').update(zdr=True)"
    )
    with quickstart.serving() as url:
        key = (quickstart.checkout / "var" / "quickstart.key").read_text().strip()
        hello = {"model": "demo/echo", "messages": [{"role": "user", "content": "Hello"}]}
        answered = httpx.post(
            url + "/v1/chat/completions", json=hello, timeout=30,
            headers={"authorization": f"Bearer {key}"},
        )  # fmt: skip
    assert answered.status_code == 200, answered.text
    kept = quickstart.shell(
        rows + "print([(p.name, p.display_name, p.zdr) for p in "
        "P.objects.filter(name__in=['demo', 'openai']).order_by('name')])"
    )
    assert kept == "[('demo', 'Our demo', False), ('openai', 'OpenAI', True)]"


def test_the_readmes_embeddings_call_is_served_by_the_demo(quickstart: Quickstart) -> None:
    with quickstart.serving() as url:
        key = (quickstart.checkout / "var" / "quickstart.key").read_text().strip()
        body = {"model": "demo/embed", "input": ["Hello", "World"]}
        answered = httpx.post(
            url + "/v1/embeddings", json=body, timeout=30,
            headers={"authorization": f"Bearer {key}"},
        )  # fmt: skip
    assert answered.status_code == 200, answered.text
    data = answered.json()["data"]
    assert [item["embedding"] for item in data] == [
        embedding_vector("Hello"),
        embedding_vector("World"),
    ]


def test_the_readmes_responses_call_is_served_by_the_demo(quickstart: Quickstart) -> None:
    with quickstart.serving() as url:
        key = (quickstart.checkout / "var" / "quickstart.key").read_text().strip()
        answered = httpx.post(
            url + "/v1/responses", json={"model": "demo/echo", "input": "Hello"}, timeout=30,
            headers={"authorization": f"Bearer {key}"},
        )  # fmt: skip
    assert answered.status_code == 200, answered.text
    response = answered.json()
    assert response["id"] == "resp_" + answered.headers["x-momor-request-id"]
    assert (response["object"], response["status"], response["model"]) == (
        "response", "completed", "demo/echo",
    )  # fmt: skip
    assert response["output"][0]["content"][0]["text"]


def test_the_quickstart_delivers_alerts_to_a_receiver_beside_it(
    quickstart: Quickstart, receiver: Receiver
) -> None:
    """The quickstart's own process runs the alerts loop (embedded mode) and lets an endpoint
    on loopback be called: a rule set by its shell reaches the receiver, signed."""
    quickstart.ran()
    quickstart.shell(
        "from alerts.models import AlertRule, WebhookEndpoint; "
        "from accounts.models import Organization as O; demo = O.objects.get(slug='demo'); "
        f"hook = WebhookEndpoint(organization=demo, url='{receiver.url}'); "
        "hook.set_secret('whsec_quickstart'); hook.save(); "
        "AlertRule.objects.create(organization=demo, kind='balance', threshold=1000000)"
    )
    with quickstart.serving():
        receiver.wait_for(1, 60)
    (event,) = receiver.events()
    assert event["type"] == "balance.low" and event["organization"]["slug"] == "demo"
    assert receiver.taken[0].signed_by("whsec_quickstart")
