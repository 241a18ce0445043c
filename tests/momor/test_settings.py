"""Settings come from the environment only, with safe production defaults."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import django, json; from django.conf import settings; django.setup(); "
    "db = settings.DATABASES['default']; "
    "print(json.dumps([settings.DEBUG, db['ENGINE'], db['NAME'], settings.CELERY_BROKER_URL, "
    "settings.CACHES['default']['BACKEND'], settings.CHANNEL_LAYERS['default']['BACKEND']]))"
)


def _settings(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MOMOR_", "DATABASE_URL", "REDIS_URL"))
    }
    clean["DJANGO_SETTINGS_MODULE"] = "momor.settings"
    return subprocess.run(  # noqa: S603 - our own interpreter, with a probe written here
        [sys.executable, "-c", PROBE], cwd=ROOT, env=clean | env, capture_output=True, text=True
    )


def test_it_refuses_to_start_without_a_secret_key_when_not_debugging() -> None:
    result = _settings()
    assert result.returncode != 0
    assert "MOMOR_SECRET_KEY is required when MOMOR_DEBUG is off" in result.stderr


def test_debug_is_off_unless_asked() -> None:
    result = _settings(MOMOR_SECRET_KEY="s")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("[false,")


def test_it_runs_embedded_without_database_url_or_redis() -> None:
    result = _settings(MOMOR_DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f'[true, "django.db.backends.sqlite3", "{ROOT / "var" / "momor.sqlite3"}", null, '
        '"django.core.cache.backends.locmem.LocMemCache", "channels.layers.InMemoryChannelLayer"]'
    )


def test_database_url_and_redis_url_switch_on_postgres_and_the_shared_pieces() -> None:
    result = _settings(
        MOMOR_SECRET_KEY="s",
        DATABASE_URL="postgres://momor:pw@db.example:5432/momor",
        REDIS_URL="redis://cache.example:6379/2",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        '[false, "django.db.backends.postgresql", "momor", "redis://cache.example:6379/2", '
        '"django.core.cache.backends.redis.RedisCache", "channels_redis.core.RedisChannelLayer"]'
    )


def test_a_malformed_boolean_fails_loudly() -> None:
    result = _settings(MOMOR_SECRET_KEY="s", MOMOR_DEBUG="maybe")
    assert result.returncode != 0
    assert "MOMOR_DEBUG must be a boolean" in result.stderr


BROKER_PROBE = (
    "import django, json; from django.conf import settings; django.setup(); "
    "print(json.dumps([settings.CELERY_BROKER_URL, settings.CELERY_BROKER_TRANSPORT_OPTIONS, "
    "[(q.name, q.durable, q.queue_arguments) for q in settings.CELERY_TASK_QUEUES or []], "
    "settings.CACHES['default'].get('LOCATION')]))"
)


def _broker_settings(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MOMOR_", "DATABASE_URL", "REDIS_URL"))
    }
    clean |= {"DJANGO_SETTINGS_MODULE": "momor.settings", "MOMOR_SECRET_KEY": "s"}
    return subprocess.run(  # noqa: S603 - our own interpreter, with a probe written here
        [sys.executable, "-c", BROKER_PROBE], cwd=ROOT, env=clean | env, capture_output=True,
        text=True,
    )  # fmt: skip


def test_rabbitmq_as_broker_gets_a_quorum_queue_and_publisher_confirms() -> None:
    result = _broker_settings(
        REDIS_URL="redis://cache.example:6379/2",
        MOMOR_BROKER_URL="amqp://momor:pw@mq.example:5672/momor",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        "amqp://momor:pw@mq.example:5672/momor",
        {"confirm_publish": True},
        [["celery", True, {"x-queue-type": "quorum"}]],
        "redis://cache.example:6379/2",
    ]


def test_a_cluster_redis_url_needs_a_single_redis_for_the_cache() -> None:
    result = _broker_settings(REDIS_URL="redis+cluster://10.0.0.1:6379,10.0.0.2:6379")
    assert result.returncode != 0
    assert "set MOMOR_CACHE_REDIS_URL to a single Redis" in result.stderr


def test_with_a_cluster_the_cache_and_the_broker_use_the_single_redis() -> None:
    result = _broker_settings(
        REDIS_URL="redis+cluster://10.0.0.1:6379",
        MOMOR_CACHE_REDIS_URL="redis://cache.example:6379/0",
    )
    assert result.returncode == 0, result.stderr
    broker, options, queues, cache = json.loads(result.stdout)
    assert (broker, queues, cache) == ("redis://cache.example:6379/0", [], broker)
    assert options["visibility_timeout"] == 300


LAYER_PROBE = (
    "import django, json; django.setup(); from channels.layers import get_channel_layer; "
    "layer = get_channel_layer(); (host,) = layer.hosts; "
    "print(json.dumps([layer.brpop_timeout, host['socket_timeout'], "
    "host['socket_connect_timeout'], host['address']]))"
)


def _channel_layer(**env: str) -> list[object]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MOMOR_", "DATABASE_URL", "REDIS_URL"))
    }
    clean |= {"DJANGO_SETTINGS_MODULE": "momor.settings", "MOMOR_SECRET_KEY": "s"}
    result = subprocess.run(  # noqa: S603 - our own interpreter, with a probe written here
        [sys.executable, "-c", LAYER_PROBE], cwd=ROOT, env=clean | env, capture_output=True,
        text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    found: list[object] = json.loads(result.stdout)
    return found


def test_the_channel_layers_reads_outlast_its_blocking_read() -> None:
    """An idle feed's receive waits in Redis for the layer's blocking read; a socket time-out
    under it broke the feed every few seconds. Connecting stays bounded by the time-out."""
    for env in (
        {"REDIS_URL": "redis://cache.example:6379/2"},
        {"REDIS_URL": "redis+cluster://10.0.0.1:6379", "MOMOR_CACHE_REDIS_URL": "redis://c:6379"},
    ):
        block, read, connect, _ = _channel_layer(**env, MOMOR_REDIS_TIMEOUT_SECONDS="2")
        assert (block, read, connect) == (5, 7.0, 2.0)
