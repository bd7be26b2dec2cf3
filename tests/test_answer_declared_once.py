"""An answer's fields are declared once (gateway.answer_fields.AnswerFields): the answer log's column
lists, the API's AnswerOut and the log's AnswerRow are derived from that declaration and the
migrations, so that adding a logged field is one field and one migration (docs/architecture.md).

Checked on the real thing: the lists against the columns a fresh gateway.db gets, the wire types in
the OpenAPI document the app serves; and on a modified declaration, that a field added without its
migration (or a migration without its field) is refused, while one added in both reaches every list.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from gateway.answer.result import AnswerResult
from gateway.answer_fields import AnswerFields, logged
from gateway.records import db as gdb
from gateway.records.answer_rows import COLUMNS, JSON_COLUMNS, TIMING_COLUMNS, answer_columns
from gateway.web.responses import AnswerOut, AnswerRow, answer_fields, answer_row_fields

TIMINGS = ("retrieval_ms", "embed_ms", "ttft_ms", "total_ms", "prompt_tokens", "output_tokens", "decode_tps")
ADD_COLUMNS = ("answer_added", ["ALTER TABLE answers ADD COLUMN added_text TEXT NOT NULL DEFAULT ''",
                                "ALTER TABLE answers ADD COLUMN added_json TEXT NOT NULL DEFAULT '{}'"])


@dataclass
class WithAdded(AnswerFields[Any, str]):
    """The declaration with two fields more, as a maintainer would add them."""

    added_text: str = ""
    added_json: dict[str, Any] = field(default_factory=dict)


def test_the_log_lists_are_the_columns_the_migrations_make(tmp_path: Path) -> None:
    with gdb.opened(tmp_path / "gateway.db") as db:
        table = [row[1] for row in db.conn.execute("PRAGMA table_info(answers)")]
    assert list(COLUMNS) == table
    stored = [f.name for f in dataclasses.fields(AnswerFields) if logged(f).stored]
    assert set(COLUMNS) == set(stored) | set(TIMING_COLUMNS)
    assert TIMING_COLUMNS == TIMINGS
    assert JSON_COLUMNS == ("scope", "flags", "citations", "passages", "generation_config", "timings", "support")
    # the answer core adds types, not fields: what it fills is what is declared
    assert [f.name for f in dataclasses.fields(AnswerResult)] == [f.name for f in dataclasses.fields(AnswerFields)]


def test_a_field_added_in_one_place_only_is_refused() -> None:
    with pytest.raises(RuntimeError, match=r"fields without a column .*'added_json', 'added_text'"):
        answer_columns(WithAdded)  # the field, no migration
    with pytest.raises(RuntimeError, match=r"columns without a field \['added_json', 'added_text'\]"):
        answer_columns(AnswerFields, [*gdb.MIGRATIONS, ADD_COLUMNS])  # the migration, no field


def test_a_field_added_with_its_migration_reaches_every_list_and_schema() -> None:
    columns, json_columns, timing = answer_columns(WithAdded, [*gdb.MIGRATIONS, ADD_COLUMNS])
    assert columns == (*COLUMNS, "added_text", "added_json")
    assert json_columns == (*JSON_COLUMNS, "added_json") and timing == TIMING_COLUMNS
    out = answer_fields(WithAdded)
    assert list(out) == [*answer_fields(), "added_text", "added_json"]
    assert out["added_text"] is str and out["added_json"] == dict[str, Any]
    row = answer_row_fields(WithAdded, columns)
    assert list(row) == [*COLUMNS, "added_text", "added_json", "flag_details", "feedback"]
    assert row["added_text"] is str


def test_the_served_openapi_document_carries_every_field_and_column(tmp_path: Path) -> None:
    from gateway.config import Settings
    from gateway.web.app import create_app

    with TestClient(create_app(Settings(data_dir=tmp_path / "data"), warm=False)) as client:
        schemas = client.get("/api/v1/schema/openapi.json").json()["components"]["schemas"]
    declared = [f.name for f in dataclasses.fields(AnswerFields)]
    assert list(schemas["AnswerOut"]["properties"]) == declared == list(AnswerOut.__struct_fields__)
    row = [*COLUMNS, "flag_details", "feedback"]
    assert list(schemas["AnswerRow"]["properties"]) == row == list(AnswerRow.__struct_fields__)
    assert list(schemas["AnswerDetail"]["properties"]) == [*row, "chain"]
    for column in TIMING_COLUMNS:  # a timing is a number, or null where the answer had none
        kinds = {k["type"] for k in schemas["AnswerRow"]["properties"][column]["oneOf"]}
        assert kinds in ({"number", "null"}, {"integer", "null"}), (column, kinds)
