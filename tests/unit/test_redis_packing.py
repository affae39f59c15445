"""infra.redis packs the agent read's commands itself (redis-py's packing cost a third of a trip): the bytes
must be the very ones redis-py sends, for every argument type the code sends, and anything else is left to
redis-py."""

import pytest
from redis.connection import Connection

from curation.infra.redis import _packed

CASES = [
    (("GET", "memoryadmin:1:api-read-generation"),),
    (("INCR", "memoryadmin:1:api-rate:3:29"), ("EXPIRE", "memoryadmin:1:api-rate:3:29", 90, "NX")),
    (("RPUSH", "memoryadmin:1:api-retrievals-buffered", '{"query":"é ü 日本","entry_ids":[1,2]}'),),
    (("CLIENT ID",),),  # a first argument with words, as redis-py splits it
    (("CLIENT", "ID"),),
    (("SET", b"\x00\xff\r\n", b""),),
    (("LRANGE", "k", 0, -1),),
]


@pytest.mark.parametrize("commands", CASES)
def test_the_commands_are_packed_as_redis_py_packs_them(commands):
    connection = Connection()
    assert _packed(connection, commands) == [b"".join(connection.pack_commands(commands))]


@pytest.mark.parametrize("argument", [1.5, True, None, memoryview(b"x")])
def test_another_type_of_argument_is_left_to_redis_py(argument):
    assert _packed(Connection(), (("SET", "k", argument),)) is None
