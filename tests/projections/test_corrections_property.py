"""Property: for any sequence of records of seed 004's paper that grow, withdraw, observe again and go over the
page cap (built by hand, `tests.helpers.published`), importing them in order with `--withdraw-missing` rebuilds
each at its own as_of byte for byte, and every earlier record still does.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ledger.core.canonical import canonical
from ledger.model.published import observation_digest
from tests.conftest import AS_OF_004, PAPER_004, SEED_004, Cli
from tests.helpers import PAGE_CAP, citing_observation, published, seed_record, write_record

STEP = st.one_of(
    st.tuples(st.just("grow"), st.integers(1, 6), st.booleans()),  # how many, whether they sort first
    st.tuples(st.just("withdraw"), st.integers(0, 10**6), st.booleans()),  # which present one, whether a listed one
    st.tuples(st.just("observe again"), st.integers(0, 10**6), st.just(False)),  # which withdrawn one
    st.tuples(st.just("over the cap"), st.integers(1, 12), st.booleans()),  # how far past it
)


class Publisher:
    """The upstream world: which observations of the paper exist now, and the records it published."""

    def __init__(self):
        self.present = {obs["observation_id"]: obs for obs in seed_record()["inbound"]}
        self.gone: dict[str, dict] = {}
        self.made = 0

    def new(self, day: str, early: bool) -> None:
        self.made += 1
        obs = citing_observation(self.made, day, checked=self.made % 3 != 0, month="2501" if early else "2608")
        self.present[obs["observation_id"]] = obs

    def step(self, index: int, step: tuple) -> dict:
        action, number, flag = step
        day = f"2026-08-{10 + index:02d}T00:00:00Z"
        if action == "grow":
            for _ in range(number):
                self.new(day, flag)
        elif action == "over the cap":
            for _ in range(max(1, PAGE_CAP + number - len(self.present))):
                self.new(day, flag)
        elif action == "withdraw" and self.present:
            ordered = published(day, list(self.present.values()))["inbound"]  # page order, capped
            pool = [o["observation_id"] for o in ordered] if flag else sorted(self.present)
            oid = pool[number % len(pool)]
            self.gone[oid] = self.present.pop(oid)
        elif action == "observe again" and self.gone:
            oid = sorted(self.gone)[number % len(self.gone)]
            obs = copy.deepcopy(self.gone.pop(oid))
            obs["citation"]["source_observed_at"] = day  # observed again, after its withdrawal
            obs["observation_digest"] = observation_digest(obs)
            self.present[oid] = obs
        return published(f"2026-08-{10 + index:02d}T12:00:00Z", list(self.present.values()))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=1, max_size=5))
# Over the cap; a listed one withdrawn (the next takes its place); one sorting first pushes the last out; the
# withdrawn one observed again; then back under the cap, so the record lists all it counts.
@example([("over the cap", 8, False), ("withdraw", 3, True), ("grow", 2, True), ("observe again", 0, False),
          ("withdraw", 0, False)])
@example([("over the cap", 1, False), ("withdraw", 0, False), ("withdraw", 5, False), ("withdraw", 7, True)])
def test_records_that_grow_shrink_and_pass_the_cap_all_rebuild(steps):
    with tempfile.TemporaryDirectory() as folder:
        cli = Cli(str(Path(folder) / "ledger.db"))
        assert cli("init").exit_code == 0
        assert cli("import", str(SEED_004)).exit_code == 0
        publisher, records = Publisher(), [(AS_OF_004, SEED_004.read_bytes())]
        for index, step in enumerate(steps):
            record = publisher.step(index, step)
            result = cli("import", "--withdraw-missing", write_record(Path(folder) / f"r{index}.json", record))
            assert (result.exit_code, result.stderr) == (0, ""), step
            records.append((record["as_of"], canonical(record)))
            for as_of, data in records:
                replayed = cli("replay", "--paper", PAPER_004, "--as-of", as_of)
                assert replayed.stdout_bytes == data, (as_of, steps[: index + 1])
