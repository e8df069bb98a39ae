"""One list of record fields (``blackbox.driver.record``) that every writer and reader of records uses."""

from __future__ import annotations

import dataclasses

import pytest

from blackbox.driver import logs, record
from blackbox.errors import StateError


def test_one_list_of_fields():
    assert record.RECORD_FIELDS == [f.name for f in dataclasses.fields(record.Record)]
    assert logs.RECORD_FIELDS is record.RECORD_FIELDS
    assert record.INT_FIELDS <= set(record.RECORD_FIELDS)
    grouped = [name for names in record.FIELD_GROUPS.values() for name in names]
    assert sorted(grouped + ["generation"]) == sorted(record.RECORD_FIELDS)  # each field in one group


def test_csv_records_read_back_as_the_types_of_the_fields(tmp_path):
    row = record.Record(generation=3, evaluations=40, steps=0, time=1.5, generation_time=0.5, best=2.0,
                        mean=1.0, median=1.0, worst=0.0, center=None, center_rank=None, above_mean=4,
                        sigma=0.1, update_norm=0.25, best_ever=2.0)
    logs.rewrite_records(tmp_path / "records.csv", None, [row])
    back, = logs.read_csv_records(tmp_path / "records.csv")
    assert back == row.as_dict()
    assert {k for k, v in back.items() if isinstance(v, int)} == record.INT_FIELDS - {"center_rank"}


def test_a_record_file_written_outside_a_run_says_so(tmp_path):
    writer = logs.JSONLRecords(tmp_path / "records.jsonl")
    with pytest.raises(StateError, match=r"JSONLRecords writes .*records.jsonl between on_start\(\) and on_end\(\) only"):
        writer.on_generation(None, None)
