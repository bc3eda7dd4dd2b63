from __future__ import annotations

import pytest

from runner.declarations.paths import PathError, is_under, location_key, resolve_path

PROJECT = "/srv/project"


@pytest.mark.parametrize(
    ("declared", "resolved"),
    [
        ("warehouse/orders", "/srv/project/warehouse/orders"),
        ("warehouse/orders/", "/srv/project/warehouse/orders"),
        ("./warehouse//orders", "/srv/project/warehouse/orders"),
        ("warehouse/x/../orders", "/srv/project/warehouse/orders"),
        ("../shared/orders", "/srv/shared/orders"),
        ("/data/orders/", "/data/orders"),
        ("//data/orders", "/data/orders"),
        ("file:///srv/project/warehouse/orders", "/srv/project/warehouse/orders"),
        ("file:/srv/project/warehouse/orders/", "/srv/project/warehouse/orders"),
        ("file://localhost/data/my%20orders", "/data/my orders"),
        ("s3://bucket/warehouse/orders/", "s3://bucket/warehouse/orders"),
        ("s3a://bucket//warehouse/./x/../orders", "s3a://bucket/warehouse/orders"),
        ("s3://bucket/", "s3://bucket"),
        ("hdfs://namenode:8020/warehouse/orders", "hdfs://namenode:8020/warehouse/orders"),
    ],
)
def test_resolve_path_normalises_every_spelling(declared: str, resolved: str) -> None:
    assert resolve_path(declared, PROJECT) == resolved


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ("   ", "expected a path or URI, got an empty string"),
        ("file://otherhost/data", 'expected a local file URI such as file:///data/orders, got "file://otherhost/data" '
                                  '(host "otherhost" is not this machine)'),
        ("file:data/orders", 'expected an absolute file URI such as file:///data/orders, got "file:data/orders"'),
        ("s3:/bucket/x", 'expected a URI such as s3://bucket/warehouse/orders, got "s3:/bucket/x"'),
        ("s3:///x", 'expected a bucket or host after "s3://", got "s3:///x"'),
    ],
)
def test_resolve_path_rejects_what_cannot_be_a_table_location(declared: str, message: str) -> None:
    with pytest.raises(PathError) as caught:
        resolve_path(declared, PROJECT)
    assert str(caught.value) == message


def test_s3_connector_spellings_are_one_location() -> None:
    assert location_key("s3a://b/x") == location_key("s3://b/x") == location_key("s3n://b/x")


@pytest.mark.parametrize(
    ("location", "root", "under"),
    [
        ("/srv/warehouse/orders", "/srv/warehouse", True),
        ("/srv/warehouse", "/srv/warehouse", True),
        ("/srv/warehouse2/orders", "/srv/warehouse", False),
        ("/srv/orders", "/", True),
        ("s3a://bucket/lake/orders", "s3://bucket/lake", True),
        ("s3://bucket/lakehouse", "s3://bucket/lake", False),
        ("s3://other/lake/orders", "s3://bucket/lake", False),
    ],
)
def test_is_under_compares_whole_segments(location: str, root: str, under: bool) -> None:
    assert is_under(location, root) is under
