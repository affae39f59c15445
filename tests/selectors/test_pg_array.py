"""selectors.sql.pg_array: a list as one PostgreSQL array literal that the database reads back as the list."""

import pytest
from django.db import connection

from curation.selectors.sql import pg_array

pytestmark = pytest.mark.django_db

TEXTS = [
    ["acme/billing-api", "acme", "org 1/svc, {x}"],
    ['say "hi"', r"a\b", "plain", "", "ünïcode, with NULL"],
    ["NULL"],
]


def test_literals():
    assert pg_array(["acme", "acme/b c"]) == '{"acme","acme/b c"}'
    assert pg_array(['say "hi"', r"a\b"]) == r'{"say \"hi\"","a\\b"}'
    assert pg_array([3, 1, 2]) == "{3,1,2}" and pg_array([]) == "{}"


@pytest.mark.parametrize("texts", TEXTS)
def test_postgresql_reads_back_the_list(texts):
    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL literal")
    with connection.cursor() as cursor:
        cursor.execute("SELECT CAST(%s AS text[])", [pg_array(texts)])
        assert cursor.fetchone()[0] == texts
