"""The OpenAPI schema fuzzed against the app: schemathesis draws requests for every operation from the
schema, conforming ones and ones that break it (hypothesis runs them): whatever a client sends, never a 500
and never a traceback, and every error is one line. (Driven through hypothesis directly: schemathesis's
pytest plugin does not run on this pytest.)"""

import orjson
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable

from ledger.storage.store import Store
from tests.web.conftest import fill


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from ledger.log.signed_notes import generate_signer
    from ledger.web.app import create_app

    folder = tmp_path_factory.mktemp("fuzzed")
    store = Store.create(str(folder / "ledger.db"))
    fill(store, folder)
    return create_app(store, generate_signer("example.org/ledger"))


def check(case) -> None:
    response = case.call()
    where = (case.method, case.formatted_path, case.query, response.status_code, response.text[:300])
    assert response.status_code in (200, 304, 308, 400, 404), where
    assert b"Traceback" not in response.content, where
    if response.status_code >= 400:
        body = orjson.loads(response.content)
        assert set(body) == {"error", "status"} and body["status"] == response.status_code, where
        assert response.content.count(b"\n") == 1, where


@pytest.mark.parametrize("mode", list(schemathesis.GenerationMode), ids=lambda m: m.value)
def test_no_request_gets_a_500_or_a_traceback(app, mode):
    api = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) == 19  # 18, and the paper index note of a size (issue 47)
    fuzzed = 0
    for operation in operations:
        run = given(case=operation.as_strategy(generation_mode=mode))(check)
        try:
            settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))(run)()
        except Unsatisfiable:
            # Only when no request can break the schema: no parameter, or only unconstrained path strings.
            assert mode is schemathesis.GenerationMode.NEGATIVE and not any(
                p.location == "query" for p in operation.iter_parameters()), operation.label
            continue
        fuzzed += 1
    assert fuzzed >= (19 if mode is schemathesis.GenerationMode.POSITIVE else 9)


def test_the_schema_lists_every_path(app):
    paths = set(app.openapi()["paths"])
    assert paths == {"/", "/404.html", "/evidence", "/assets/{name}", "/checkpoint", "/tile/{rest}",
                     "/paper/{paper}/as-of/{day}/citation-record.json", "/paper/{paper}/as-of/{day}/citation-record",
                     "/paper/{paper}/citation-record.json", "/paper/{paper}/citation-record",
                     "/paper/{paper}/integrity.json", "/paper/{paper}/integrity", "/paper/{paper}/history.json",
                     "/paper/{paper}/diff.json", "/paper/{paper}/diff",
                     "/paper/{paper}/as-of/{day}/changes", "/paper/{paper}", "/papers/{month}", "/paper-index/{size}"}
