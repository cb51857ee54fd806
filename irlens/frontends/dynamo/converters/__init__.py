"""The Dynamo frontend's converters, one module per op family: each turns a call (`call.Call`) into
common-view nodes and registers itself by native name or canonical op (`call.converts`)."""
from irlens.frontends.dynamo.converters import (  # noqa: F401  (each registers its converters)
    arithmetic, creation, indexing, library, movement, nn)
