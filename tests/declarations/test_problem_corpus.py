"""The corpus: bad declarations and the exact problems `load_project` reports for them.

Each case is `{file: text}` (project.yml defaults to `name: test`) and the complete, sorted list
of rendered problems. Messages are part of the user interface, so they are pinned exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from runner.declarations.loader import load_project
from runner.errors import DeclarationError

from .conftest import WriteProject

T = "name: t\npath: warehouse/t\n"  # the two required fields, on lines 1 and 2
POLICIES = "KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS, KEEP_LATEST_BY_HOURS"
CLEAN_KEYS = "policy, commits_retained, file_versions_retained, hours_retained, incremental"
SIZE = "expected a size such as 120MiB, 100 MB or a number of bytes (units: B, KB, MB, GB, KiB, MiB, GiB)"

CASES: dict[str, tuple[Mapping[str, str | None], list[str]]] = {
    "retention below its minimum": (
        {"tables/t.yml": T + "clean:\n  commits_retained: 0\n"},
        ["tables/t.yml:4:3: clean.commits_retained: must be >= 1, got 0"],
    ),
    "octal-looking retention": (
        {"tables/t.yml": T + "clean:\n  commits_retained: 010\n"},
        [
            'tables/t.yml:4:3: clean.commits_retained: expected an integer, got "010" '
            "(YAML 1.1 reads it as octal 8, YAML 1.2 as 10); write 10"
        ],
    ),
    "sexagesimal-looking hours": (
        {"tables/t.yml": T + "clean:\n  policy: KEEP_LATEST_BY_HOURS\n  hours_retained: 1:30\n"},
        [
            'tables/t.yml:5:3: clean.hours_retained: expected an integer, got "1:30" '
            "(YAML 1.1 reads it as the base-60 number 90, YAML 1.2 as a string)"
        ],
    ),
    "underscored number": (
        {"tables/t.yml": T + "file_sizing:\n  insert_split_size: 500_000\n"},
        [
            'tables/t.yml:4:3: file_sizing.insert_split_size: expected an integer, got "500_000" '
            "(YAML 1.1 reads it as 500000, YAML 1.2 as a string); write 500000"
        ],
    ),
    "date-looking owner": (
        {"tables/t.yml": T + "owner: 2024-01-01\n"},
        [
            'tables/t.yml:3:1: owner: expected a string, got "2024-01-01" '
            '(YAML 1.1 reads it as a date, YAML 1.2 as a string); quote it: "2024-01-01"'
        ],
    ),
    "yes for a boolean": (
        {"tables/t.yml": T + "clean:\n  incremental: yes\n"},
        [
            'tables/t.yml:4:3: clean.incremental: expected true or false, got "yes" '
            "(YAML 1.1 reads it as true, YAML 1.2 as a string); write true"
        ],
    ),
    "off for a boolean": (
        {"tables/t.yml": T + "clean:\n  incremental: off\n"},
        [
            'tables/t.yml:4:3: clean.incremental: expected true or false, got "off" '
            "(YAML 1.1 reads it as false, YAML 1.2 as a string); write false"
        ],
    ),
    "on in a list of strings": (
        {"tables/t.yml": T + "tags: [gold, on]\n"},
        [
            'tables/t.yml:3:14: tags[1]: expected a string, got "on" '
            '(YAML 1.1 reads it as true, YAML 1.2 as a string); quote it: "on"'
        ],
    ),
    "a float where an integer belongs": (
        {"tables/t.yml": T + "clean:\n  commits_retained: 10.0\n"},
        ["tables/t.yml:4:3: clean.commits_retained: expected an integer, got 10.0"],
    ),
    "a word where an integer belongs": (
        {"tables/t.yml": T + "clean:\n  commits_retained: ten\n"},
        ['tables/t.yml:4:3: clean.commits_retained: expected an integer, got "ten"'],
    ),
    "an empty value": (
        {"tables/t.yml": T + "owner:\n"},
        ["tables/t.yml:3:1: owner: expected a string, got an empty value"],
    ),
    "unknown size unit": (
        {"tables/t.yml": T + "file_sizing:\n  max_file_size: 12 XB\n"},
        [f'tables/t.yml:4:3: file_sizing.max_file_size: {SIZE}, got "12 XB" (unknown unit "XB")'],
    ),
    "fractional size": (
        {"tables/t.yml": T + "file_sizing:\n  max_file_size: 1.5GiB\n"},
        [
            f'tables/t.yml:4:3: file_sizing.max_file_size: {SIZE}, got "1.5GiB" '
            "(use a whole number, for example 1536MiB instead of 1.5GiB)"
        ],
    ),
    "octal-looking size": (
        {"tables/t.yml": T + "file_sizing:\n  small_file_limit: 010\n"},
        [
            "tables/t.yml:4:3: file_sizing.small_file_limit: expected a size (a number of bytes, or a string like "
            '120MiB), got "010" (YAML 1.1 reads it as octal 8, YAML 1.2 as 10); write 10'
        ],
    ),
    "negative size": (
        {"tables/t.yml": T + "file_sizing:\n  small_file_limit: -1\n"},
        ["tables/t.yml:4:3: file_sizing.small_file_limit: must be >= 0, got -1"],
    ),
    "zero max file size": (
        {"tables/t.yml": T + "file_sizing:\n  max_file_size: 0MiB\n  small_file_limit: 0\n"},
        ['tables/t.yml:4:3: file_sizing.max_file_size: must be at least 1 byte, got "0MiB"'],
    ),
    "unknown top-level key": (
        {"tables/t.yml": T + "owners: crm\n"},
        [
            'tables/t.yml:3:1: owners: unknown key (did you mean "owner"?); allowed here: name, path, description, '
            "owner, tags, clean, file_sizing, spark, table, metadata_table"
        ],
    ),
    "unknown nested key": (
        {"tables/t.yml": T + "clean:\n  retain_commits: 3\n"},
        [f"tables/t.yml:4:3: clean.retain_commits: unknown key; allowed here: {CLEAN_KEYS}"],
    ),
    "missing required fields": (
        {"tables/t.yml": "# just a comment\nowner: crm\n"},
        ["tables/t.yml:2:1: name: is required but missing", "tables/t.yml:2:1: path: is required but missing"],
    ),
    "name pattern": (
        {"tables/t.yml": "name: Orders-2\npath: warehouse/t\n"},
        [
            "tables/t.yml:1:1: name: expected a lowercase letter followed by lowercase letters, digits or "
            'underscores, got "Orders-2"'
        ],
    ),
    "policy typo": (
        {"tables/t.yml": T + "clean:\n  policy: keep_latest_commits\n"},
        [
            f'tables/t.yml:4:3: clean.policy: expected one of {POLICIES}, got "keep_latest_commits" '
            '(did you mean "KEEP_LATEST_COMMITS"?)'
        ],
    ),
    "unknown resize strategy": (
        {"tables/t.yml": T + "file_sizing:\n  strategy: copy\n"},
        ['tables/t.yml:4:3: file_sizing.strategy: expected one of rewrite, binary_copy, got "copy"'],
    ),
    "metadata_table as a boolean": (
        {"tables/t.yml": T + "metadata_table: false\n"},
        ["tables/t.yml:3:1: metadata_table: expected one of keep, disable, got false"],
    ),
    "table block shapes": (
        {"tables/t.yml": T + "table:\n  type: COW\n  record_key: id,ts\n  partition_by: [a, a]\n"},
        [
            'tables/t.yml:4:3: table.type: expected one of COPY_ON_WRITE, MERGE_ON_READ, got "COW"',
            "tables/t.yml:5:3: table.record_key: expected one field name without commas (Hudi would read it as "
            'several fields; write a list such as [a, b] instead), got "id,ts"',
            'tables/t.yml:6:3: table.partition_by: must not repeat items, got "a" more than once',
        ],
    ),
    "a key list with an item of the wrong kind": (
        # The list branch of `record_key: a | [a, b]` rejected the item, which was then reported as
        # "expected a string or a list, got a list": the list, not its item, seemed to be wrong.
        {"tables/t.yml": T + "table:\n  record_key: [id, 3]\n  partition_by: [day, [hour]]\n"},
        [
            "tables/t.yml:4:20: table.record_key[1]: expected a string, got 3",
            "tables/t.yml:5:23: table.partition_by[1]: expected a string, got a list",
        ],
    ),
    "retention field of another policy": (
        {"tables/t.yml": T + "clean:\n  hours_retained: 5\n"},
        [
            "tables/t.yml:4:3: clean.hours_retained: applies only to policy KEEP_LATEST_BY_HOURS, but this table's "
            "policy is KEEP_LATEST_COMMITS (Hudi's default); remove it, or set clean.policy: KEEP_LATEST_BY_HOURS"
        ],
    ),
    "retention field of another policy, policy from the project": (
        {
            "project.yml": "name: test\ndefaults:\n  clean:\n    policy: KEEP_LATEST_BY_HOURS\n",
            "tables/t.yml": T + "clean:\n  commits_retained: 5\n",
        },
        [
            "tables/t.yml:4:3: clean.commits_retained: applies only to policy KEEP_LATEST_COMMITS, but this table's "
            "policy is KEEP_LATEST_BY_HOURS (the project default at project.yml:4:5); remove it, or set "
            "clean.policy: KEEP_LATEST_COMMITS"
        ],
    ),
    "small files not below the table's max": (
        {"tables/t.yml": T + "file_sizing:\n  max_file_size: 64MiB\n  small_file_limit: 64MiB\n"},
        [
            "tables/t.yml:5:3: file_sizing.small_file_limit: must be less than max_file_size (64MiB, set at "
            "tables/t.yml:4:3), got 64MiB; lower it, or write 0 to turn small-file handling off"
        ],
    ),
    "table max below the project's small files": (
        {
            "project.yml": "name: test\ndefaults:\n  file_sizing:\n    small_file_limit: 50MB\n",
            "tables/t.yml": T + "file_sizing:\n  max_file_size: 50000000\n",
        },
        [
            "tables/t.yml:4:3: file_sizing.max_file_size: must be greater than small_file_limit (50MB, the project "
            "default at project.yml:4:5), got 50MB; raise it, or lower small_file_limit"
        ],
    ),
    "project defaults that contradict each other are reported once": (
        {
            "project.yml": "name: test\ndefaults:\n  file_sizing:\n    small_file_limit: 200MiB\n",
            "tables/a.yml": "name: a\npath: a\n",
            "tables/b.yml": "name: b\npath: b\n",
        },
        [
            "project.yml:4:5: defaults.file_sizing.small_file_limit: must be less than max_file_size (120MiB, "
            "Hudi's default), got 200MiB; lower it, or write 0 to turn small-file handling off"
        ],
    ),
    "duplicate table names": (
        {"tables/a.yml": "name: orders\npath: a\n", "tables/sub/b.yml": "name: orders\npath: b\n"},
        [
            'tables/a.yml:1:1: name: duplicate table name "orders", also declared in tables/sub/b.yml; '
            "table names must be unique",
            'tables/sub/b.yml:1:1: name: duplicate table name "orders", also declared in tables/a.yml; '
            "table names must be unique",
        ],
    ),
    "one location spelled three ways": (
        {
            "tables/a.yml": "name: a\npath: warehouse/x/\n",
            "tables/b.yml": "name: b\npath: ./warehouse/y/../x\n",
            "tables/c.yml": "name: c\npath: file://{root}/warehouse/x\n",
        },
        [
            'tables/a.yml:2:1: path: same location as "b" (tables/b.yml), "c" (tables/c.yml): {root}/warehouse/x; '
            "each table needs its own path",
            'tables/b.yml:2:1: path: same location as "a" (tables/a.yml), "c" (tables/c.yml): {root}/warehouse/x; '
            "each table needs its own path",
            'tables/c.yml:2:1: path: same location as "a" (tables/a.yml), "b" (tables/b.yml): {root}/warehouse/x; '
            "each table needs its own path",
        ],
    ),
    "path outside the allowed roots": (
        {
            "project.yml": "name: test\nallowed_roots: [warehouse, 's3://lake/prod/']\n",
            "tables/a.yml": "name: a\npath: warehouse2/a\n",
            "tables/b.yml": "name: b\npath: s3a://lake/prod/b\n",
        },
        [
            "tables/a.yml:2:1: path: resolves to {root}/warehouse2/a, outside the allowed roots ({root}/warehouse, "
            "s3://lake/prod); fix the path, or add its root to allowed_roots in project.yml"
        ],
    ),
    "a table inside another table's folder": (
        {
            "tables/inner.yml": "name: inner\npath: ./warehouse/customers/x/../legacy/\n",
            "tables/outer.yml": "name: outer\npath: warehouse/customers\n",
            "tables/s3_inner.yml": "name: s3_inner\npath: s3a://lake/t/sub\n",
            "tables/s3_outer.yml": "name: s3_outer\npath: s3://lake/t/\n",
            "tables/apart.yml": "name: apart\npath: warehouse/customers_v2\n",
        },
        [
            'tables/inner.yml:2:1: path: {root}/warehouse/customers/legacy lies inside the location of table "outer" '
            "(tables/outer.yml): {root}/warehouse/customers; the outer table's maintenance would treat this "
            "table's files as its own. Move one table so that neither folder contains the other",
            'tables/outer.yml:2:1: path: {root}/warehouse/customers contains the location of table "inner" '
            "(tables/inner.yml): {root}/warehouse/customers/legacy; the outer table's maintenance would treat "
            "that table's files as its own. Move one table so that neither folder contains the other",
            'tables/s3_inner.yml:2:1: path: s3://lake/t/sub lies inside the location of table "s3_outer" '
            "(tables/s3_outer.yml): s3://lake/t; the outer table's maintenance would treat this "
            "table's files as its own. Move one table so that neither folder contains the other",
            'tables/s3_outer.yml:2:1: path: s3://lake/t contains the location of table "s3_inner" '
            "(tables/s3_inner.yml): s3://lake/t/sub; the outer table's maintenance would treat "
            "that table's files as its own. Move one table so that neither folder contains the other",
        ],
    ),
    "control characters in paths": (
        {
            "project.yml": 'name: test\nallowed_roots: ["ware\\thouse"]\ntables_dir: "tab\\0les"\n',
            "tables/a.yml": 'name: a\npath: "warehouse/a\\0b"\n',
            "tables/b.yml": 'name: b\npath: "s3://lake/b\\nc"\n',
        },
        [
            "project.yml:2:17: allowed_roots[0]: expected text without invisible or control characters, found "
            'U+0009 a tab (a control character) at character 5 of "ware\\thouse"; remove it',
            "project.yml:3:1: tables_dir: expected text without invisible or control characters, found "
            'U+0000 NUL (a control character) at character 4 of "tab\\u0000les"; remove it',
            "tables/a.yml:2:1: path: expected text without invisible or control characters, found "
            'U+0000 NUL (a control character) at character 12 of "warehouse/a\\u0000b"; remove it',
            "tables/b.yml:2:1: path: expected text without invisible or control characters, found "
            'U+000A a newline (a control character) at character 12 of "s3://lake/b\\nc"; remove it',
        ],
    ),
    "bad path URIs": (
        {"project.yml": "name: test\nallowed_roots: ['s3:/lake']\n", "tables/a.yml": "name: a\npath: file://host/a\n"},
        [
            'project.yml:2:17: allowed_roots[0]: expected a URI such as s3://bucket/warehouse/orders, got "s3:/lake"',
            'tables/a.yml:2:1: path: expected a local file URI such as file:///data/orders, got "file://host/a" '
            '(host "host" is not this machine)',
        ],
    ),
    "duplicate YAML keys": (
        {"tables/t.yml": T + "clean:\n  commits_retained: 3\n  commits_retained: 4\n"},
        [
            "tables/t.yml:5:3: clean.commits_retained: duplicate key (first defined at line 4); YAML readers "
            "silently keep one of the two values, so remove one"
        ],
    ),
    "empty file": (
        {"tables/t.yml": "# nothing here yet\n"},
        ["tables/t.yml: the file is empty; expected a table (at least `name:` and `path:`)"],
    ),
    "a list instead of a mapping": (
        {"tables/t.yml": "- name: t\n- path: x\n"},
        [
            "tables/t.yml:1:1: expected a mapping (key: value lines) at the top of the file, got a list; "
            "the file should declare a table (at least `name:` and `path:`)"
        ],
    ),
    "a scalar instead of a mapping": (
        {"tables/t.yml": "orders\n"},
        [
            'tables/t.yml:1:1: expected a mapping (key: value lines) at the top of the file, got "orders"; '
            "the file should declare a table (at least `name:` and `path:`)"
        ],
    ),
    "YAML syntax error": (
        {"tables/t.yml": T + "clean:\n  policy: [KEEP_LATEST_COMMITS\n"},
        ["tables/t.yml:5:1: invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence at line 4); "
         "close the [ list with ] (and separate its items with commas)"],
    ),
    "not UTF-8": (
        {"tables/t.yml": None},  # written as Latin-1 bytes by the test
        ["tables/t.yml:3:11: not UTF-8 text (byte 0xe9); save the file as UTF-8"],
    ),
    "merge keys": (
        {"tables/t.yml": T + "base: &base {commits_retained: 3}\nclean:\n  <<: *base\n"},
        [
            "tables/t.yml:3:1: base: unknown key; allowed here: name, path, description, owner, tags, clean, "
            "file_sizing, spark, table, metadata_table",
            'tables/t.yml:5:3: clean["<<"]: YAML merge keys (<<) are not supported; write the keys out, or put '
            "shared settings under `defaults` in project.yml",
        ],
    ),
    "every problem of every file in one run": (
        {
            "project.yml": "name: test\ntables_dir: tables\nspark:\n  conf: {spark.x: [1]}\n",
            "tables/a.yml": "name: a\npath: a\nclean: {commits_retained: 0, incremental: 1}\n",
            "tables/b.yml": "name: b\n",
        },
        [
            'project.yml:4:10: spark.conf["spark.x"]: expected a string, a number or true/false, got a list',
            "tables/a.yml:3:9: clean.commits_retained: must be >= 1, got 0",
            "tables/a.yml:3:30: clean.incremental: expected true or false, got 1",
            "tables/b.yml:1:1: path: is required but missing",
        ],
    ),
    "missing project.yml": (
        {"project.yml": None, "tables/t.yml": T},
        [
            "project.yml: not found in {root}; every project needs a project.yml with at least `name:`. To fix this, "
            "create it, or pass the right folder with --project-dir"
        ],
    ),
    "invalid project.yml": (
        {"project.yml": "tables: tables\ndefaults:\n  clean:\n    policy: NEVER\n", "tables/t.yml": T},
        [
            "project.yml:1:1: name: is required but missing",
            'project.yml:1:1: tables: unknown key (did you mean "tables_dir"?); allowed here: name, tables_dir, '
            "allowed_roots, defaults, spark, threads, target, targets",
            f'project.yml:4:5: defaults.clean.policy: expected one of {POLICIES}, got "NEVER"',
        ],
    ),
    "a schema error does not hide a rule broken in the same file": (
        {
            "tables/t.yml": T + "owner: [a]\nclean:\n  file_versions_retained: 2\nfile_sizing:\n"
            "  max_file_size: 1MiB\n  small_file_limit: nonsense\n  insert_split_size: 0\n"
        },
        [
            "tables/t.yml:3:1: owner: expected a string, got a list",
            "tables/t.yml:5:3: clean.file_versions_retained: applies only to policy KEEP_LATEST_FILE_VERSIONS, but "
            "this table's policy is KEEP_LATEST_COMMITS (Hudi's default); remove it, or set clean.policy: "
            "KEEP_LATEST_FILE_VERSIONS",
            "tables/t.yml:7:3: file_sizing.max_file_size: must be greater than small_file_limit (100MiB, Hudi's "
            "default), got 1MiB; raise it, or lower small_file_limit",
            f'tables/t.yml:8:3: file_sizing.small_file_limit: {SIZE}, got "nonsense"',
            "tables/t.yml:9:3: file_sizing.insert_split_size: must be >= 1, got 0",
        ],
    ),
    "errors in project.yml neither stop nor fake the table checks": (
        {
            "project.yml": "name: test\nfoo: 1\ndefaults:\n  clean:\n    policy: KEEP_LATEST_FILE_VERSIONS\n"
            "  file_sizing:\n    max_file_size: 0\n",
            "tables/ok.yml": "name: ok\npath: warehouse/ok\nclean:\n  file_versions_retained: 2\n",
            "tables/t.yml": T + "clean:\n  commits_retained: 2\n",
        },
        [
            "project.yml:2:1: foo: unknown key; allowed here: name, tables_dir, allowed_roots, defaults, spark, "
            "threads, target, targets",
            "project.yml:7:5: defaults.file_sizing.max_file_size: must be >= 1, got 0",
            "tables/t.yml:4:3: clean.commits_retained: applies only to policy KEEP_LATEST_COMMITS, but this table's "
            "policy is KEEP_LATEST_FILE_VERSIONS (the project default at project.yml:5:5); remove it, or set "
            "clean.policy: KEEP_LATEST_COMMITS",
        ],
    ),
    "an unreadable project.yml does not fake problems in tables that rely on its defaults": (
        {
            "project.yml": "name: test\ndefaults: [\n",
            "tables/t.yml": T + "clean:\n  file_versions_retained: 2\nfile_sizing:\n  max_file_size: 1MiB\n",
            "tables/u.yml": "name: u\npath: w/u\nclean:\n  policy: KEEP_LATEST_COMMITS\n  hours_retained: 2\n",
        },
        [
            "project.yml:3:1: invalid YAML: did not find expected node content (while parsing a flow node); "
            "usually an unclosed [ or { (close it) or a stray , or -",
            "tables/u.yml:5:3: clean.hours_retained: applies only to policy KEEP_LATEST_BY_HOURS, but this table's "
            "policy is KEEP_LATEST_COMMITS (set at tables/u.yml:4:3); remove it, or set clean.policy: "
            "KEEP_LATEST_BY_HOURS",
        ],
    ),
    "tabs for indentation": (
        {"tables/t.yml": T + "clean:\n\tcommits_retained: 3\n"},
        [
            "tables/t.yml:4:1: invalid YAML: a tab character; YAML does not allow tabs for indentation, so indent "
            "with spaces (and set your editor to insert spaces)"
        ],
    ),
    "a unit in the wrong case": (
        {"tables/t.yml": T + "file_sizing:\n  max_file_size: 10 Mib\n"},
        [
            f'tables/t.yml:4:3: file_sizing.max_file_size: {SIZE}, got "10 Mib" (unknown unit "Mib"; did you mean '
            '"MiB"?)'
        ],
    ),
    # A value refused while reading is reported once, for what it is: not also as "got an empty
    # value" by the schema, which sees the None left in its place.
    "a tagged value": (
        {"tables/t.yml": "name: !!binary dA==\npath: warehouse/t\n"},
        [
            "tables/t.yml:1:7: name: unsupported YAML tag 'tag:yaml.org,2002:binary': declarations use plain "
            "strings, numbers, true/false, lists and mappings"
        ],
    ),
    "a list that contains itself": (
        {"tables/t.yml": T + "tags: &x [gold, *x]\n"},
        ["tables/t.yml:3:17: tags[1]: an alias refers to its own anchor (a recursive structure)"],
    ),
    # A problem in a value repeated through an alias (*k) is at the alias, where the field is, and
    # names the line the value is written on: it was reported at the anchor's line alone, where
    # another field, which may well be right, holds it.
    "a problem repeated through an alias": (
        {"tables/t.yml": T + "table:\n  record_key: &k [id, 3]\n  partition_by: *k\n"},
        [
            "tables/t.yml:4:23: table.record_key[1]: expected a string, got 3",
            "tables/t.yml:5:17: table.partition_by[1]: expected a string, got 3 (through the alias *k: "
            "written at line 4, column 23, in the value anchored &k at line 4)",
        ],
    ),
    "a mapping repeated through an alias": (
        {"tables/t.yml": T + "description: &c\n  policy: KEEP_LATEST_COMMITS\n  commits_retained: 0\nclean: *c\n"},
        [
            "tables/t.yml:3:1: description: expected a string, got a mapping",
            "tables/t.yml:6:8: clean.commits_retained: must be >= 1, got 0 (through the alias *c: written at "
            "line 5, column 3, in the value anchored &c at line 3)",
        ],
    ),
    "a list item that is an alias": (
        {"tables/t.yml": T + "owner: &o 5\ntags: [gold, *o]\n"},
        [
            "tables/t.yml:3:1: owner: expected a string, got 5",
            "tables/t.yml:4:14: tags[1]: expected a string, got 5 (through the alias *o, anchored at line 3)",
        ],
    ),
    "an alias of a target in project.yml": (
        {"project.yml": "name: test\ntargets:\n  dev: &dev\n    threads: 0\n  prod: *dev\n", "tables/t.yml": T},
        [
            "project.yml:4:5: targets.dev.threads: must be >= 1, got 0",
            "project.yml:5:9: targets.prod.threads: must be >= 1, got 0 (through the alias *dev: written at "
            "line 4, column 5, in the value anchored &dev at line 3)",
        ],
    ),
    "an alias to no anchor": (
        {"tables/t.yml": T + "tags: *gold\n"},
        [
            "tables/t.yml:3:7: invalid YAML: the alias *gold names no anchor; write &gold before the value to "
            "repeat, above this line in the same file (anchors do not reach across files)",
        ],
    ),
    "an anchor defined twice": (
        {"tables/t.yml": T + "owner: &o team\ndescription: &o text\n"},
        [
            "tables/t.yml:4:14: invalid YAML: the anchor &o is also defined at line 3; give each anchor a name "
            "of its own",
        ],
    ),
    "a number too long": (
        {"tables/t.yml": T + "clean:\n  commits_retained: " + "9" * 101 + "\n"},
        ["tables/t.yml:4:21: clean.commits_retained: number too long to be a setting"],
    ),
    "tagged values at every level of a table": (
        {"tables/t.yml": T + "metadata_table: !x keep\ntags: !x [a]\ntable:\n  partition_by: [!x a]\n"},
        [
            "tables/t.yml:3:17: metadata_table: unsupported YAML tag '!x': declarations use plain strings, numbers, "
            "true/false, lists and mappings",
            "tables/t.yml:4:7: tags: unsupported YAML tag '!x': declarations use plain strings, numbers, "
            "true/false, lists and mappings",
            "tables/t.yml:6:18: table.partition_by[0]: unsupported YAML tag '!x': declarations use plain strings, "
            "numbers, true/false, lists and mappings",
        ],
    ),
    "a tagged mapping in project.yml": (
        {"project.yml": "name: test\ndefaults: !!omap\n  - clean: {}\n", "tables/t.yml": T},
        [
            "project.yml:2:11: defaults: unsupported YAML tag 'tag:yaml.org,2002:omap': declarations use plain "
            "strings, numbers, true/false, lists and mappings"
        ],
    ),
    "missing tables folder": (
        {"project.yml": "name: test\ntables_dir: decls\n"},
        [
            'project.yml:2:1: tables_dir: folder "decls" not found in {root}; create it, or set tables_dir in '
            "project.yml"
        ],
    ),
}


def _problems(root: str) -> list[str]:
    with pytest.raises(DeclarationError) as caught:
        load_project(root)
    return [str(problem) for problem in caught.value.problems]


@pytest.mark.parametrize("case", list(CASES))
def test_bad_declarations_report_exactly(case: str, write_project: WriteProject, tmp_path: Path) -> None:
    files, expected = CASES[case]
    root = str(tmp_path)
    texts = {name: text.replace("{root}", root) for name, text in files.items() if text is not None}
    write_project(texts, project=None if "project.yml" in files else "name: test\n")
    if "tables/t.yml" in files and files["tables/t.yml"] is None:
        (tmp_path / "tables" / "t.yml").write_bytes(T.encode() + "owner: Ren\xe9\n".encode("latin-1"))
    assert _problems(root) == [line.replace("{root}", root) for line in expected]
