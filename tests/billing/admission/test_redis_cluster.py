"""Admission on a Redis Cluster: every script touches keys of one slot (its organization's, the
records stream included), organizations spread over the shards, and records reach the database
from every shard's stream. `bash scripts/test.sh` runs this file on a single Redis and again on
a three-master cluster it starts."""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest
from pytest_django.fixtures import Settings as SettingsWrapper
from redis.cluster import RedisCluster
from redis.crc import key_slot

from billing.admission.base import AdmitRequest, RateState, Ticket
from billing.admission.redis_store import (
    Settlement,
    admit_keys,
    advance_keys,
    renew_keys,
)
from billing.models import Generation
from billing.recording.hand_off import drain
from core.redis_client import cluster_nodes, is_cluster
from core.redis_keys import (
    SLOT_GROUPS,
    group_tag,
    org_group,
    org_key,
    org_prefix,
    records_stream,
    records_streams,
)
from tests.billing.conftest import HI, World
from tests.conftest import make_key, make_org
from tests.redis_helpers import client as redis_client

ORGS = range(1, 70)


def slots(keys: list[str]) -> set[int]:
    return {key_slot(key.encode()) for key in keys}


def scripts_keys(org_id: int) -> list[list[str]]:
    request = AdmitRequest("r1", org_id, "k9", 10, 5, 1_790_000_000_000, 60_000)
    ticket = Ticket("r1", org_id, "k9", 10, RateState())
    settlement = Settlement(org_id, "k9", ticket, 5, "call-1", b"{}")
    return [admit_keys(request), renew_keys(ticket), settlement.keys(), advance_keys(org_id)]


@pytest.mark.parametrize("org_id", ORGS)
def test_every_script_of_an_organization_touches_one_slot(org_id: int) -> None:
    every = [key for keys in scripts_keys(org_id) for key in keys]
    # the scripts also build the counters of the organization's meters from its prefix
    base = org_prefix(org_id, "adm")
    every += [base + "keyres:k12", base + "spent:o@d2026-12-06", base + "keyunp:m3"]
    assert len(slots(every)) == 1
    assert records_stream(org_group(org_id)) in scripts_keys(org_id)[2]


def test_the_slot_groups_spread_evenly_over_the_slot_space() -> None:
    span = 16384 // SLOT_GROUPS
    group_slots = [key_slot(group_tag(group).strip("{}").encode()) for group in range(SLOT_GROUPS)]
    assert [slot // span for slot in group_slots] == list(range(SLOT_GROUPS))
    assert len(set(records_streams())) == SLOT_GROUPS


def test_keys_are_named_by_organization_in_their_groups_tag() -> None:
    assert org_key(17, "adm", "balance") == f"momor:adm:{group_tag(1)}:17:balance"
    assert org_key(33, "adm", "balance").startswith("momor:adm:{o1")


def test_a_cluster_url_names_its_seed_nodes_and_credentials() -> None:
    nodes, options = cluster_nodes("rediss+cluster://:s3cret@10.0.0.1:7000,10.0.0.2")
    assert nodes == [("10.0.0.1", 7000), ("10.0.0.2", 6379)]
    assert options == {"ssl": True, "username": None, "password": "s3cret"}
    assert is_cluster("redis+cluster://h:1") and not is_cluster("redis://h:1/0")


@pytest.mark.django_db(transaction=True)
def test_calls_of_organizations_on_every_shard_are_admitted_and_recorded(
    world: World, settings: SettingsWrapper
) -> None:
    """One organization per slot group: each call is admitted by its group's shard, settled
    into its group's stream, and stored by the consumer reading every stream."""
    keys = [world.key]
    for group in range(1, SLOT_GROUPS):
        org = make_org(f"org-{group}", credits=Decimal(10))
        keys.append(make_key(org, name="k")[0])
    body = {"model": "openai/gpt-5-mini", "messages": HI, "max_tokens": 50}
    url = world.url + "/v1/chat/completions"
    groups = set()
    for key in keys:
        answer = httpx.post(url, json=body, headers={"authorization": f"Bearer {key}"}, timeout=30)
        assert answer.status_code == 200, answer.text
    assert drain(timeout=20)
    stored = Generation.objects.filter(status="success")
    groups = {org_group(org_id) for org_id in stored.values_list("organization_id", flat=True)}
    assert stored.count() == SLOT_GROUPS
    assert len(groups) == SLOT_GROUPS
    client = redis_client(settings.REDIS_URL)
    assert sum(int(client.xlen(stream)) for stream in records_streams()) == 0


@pytest.mark.django_db(transaction=True)
def test_on_a_cluster_organizations_spread_over_every_shard(
    world: World, settings: SettingsWrapper
) -> None:
    url = settings.REDIS_URL
    if not is_cluster(url):
        pytest.skip("REDIS_URL names a single Redis")
    client = redis_client(url)
    assert isinstance(client, RedisCluster)
    primaries = {node.name for node in client.get_primaries()}
    owners = {client.get_node_from_key(records_stream(group)).name for group in range(SLOT_GROUPS)}
    assert owners == primaries
    assert len(primaries) >= 3
