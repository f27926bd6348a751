"""Every door, one read side: MCP (mcp_server) and the Browser Use v4 adapter (browser_use_v4) call the services the
v1 API calls, never the v1 API's endpoint functions, and never each other.

The rule, read from the source of every module of those two packages (every import, at module level or inside a
function): it imports no module that declares /api/v1 endpoint functions (runs.api, runs.files_api, runs.recipes.api,
judge.api, evals.api, webhooks.api, browsers.api... as the one NinjaAPI lists its operations), and no module of the
other door. An endpoint function is v1's contract: it takes a django-ninja request, answers v1's statuses, and changes
when v1 changes; a door that calls one, or reads its module's helpers (its row queries, its serializers), inherits
that contract through a side door instead of sharing the service. What the doors share lives in modules no router
owns: runs.reading (RunOut and the runs' read side), runs.recipes.reading, runs.files, browsers.services,
runs.lifecycle, runs.human.

One module is allowed with a narrower rule: agent_platform.api, the API root. It declares one endpoint
(GET /workspace) but is also where API-key authentication, ApiRequest and the text of validation errors live, which
every door's authentication and refusals share; from it a door may import anything but an endpoint function.
"""

from collections import defaultdict

from agent_platform.api import api as v1
from tests.support.imports import imported_names, product_modules

DOORS = ("mcp_server", "browser_use_v4")
API_ROOT = "agent_platform.api"


def v1_endpoints() -> dict[str, set[str]]:
    """Each module that declares /api/v1 endpoint functions, with their names (read from the NinjaAPI's routers:
    django-ninja keeps them in `_routers`, and the test below fails if it stops finding runs.api's)."""
    found: dict[str, set[str]] = defaultdict(set)
    for _prefix, router in v1._routers:
        for path_view in router.path_operations.values():
            for operation in path_view.operations:
                found[operation.view_func.__module__].add(operation.view_func.__name__)
    return found


def crossings(imports: dict[str, set[tuple[str, str]]], endpoints: dict[str, set[str]]) -> list[str]:
    """The imports of door modules that break the rule, as 'module: imports what'."""
    found = []
    for module, pairs in sorted(imports.items()):
        door = module.split(".")[0]
        others = [other for other in DOORS if other != door]
        for base, name in sorted(pairs):
            target = f"{base}.{name}" if f"{base}.{name}" in endpoints else base
            if target == API_ROOT:
                if name in endpoints[API_ROOT]:
                    found.append(f"{module}: {API_ROOT}.{name}, an endpoint function")
            elif target in endpoints:
                found.append(f"{module}: {target}{'.' + name if target == base and name else ''}, a v1 endpoint module")
            elif any(target == other or target.startswith(f"{other}.") for other in others):
                found.append(f"{module}: {target}, another door")
    return found


def door_imports() -> dict[str, set[tuple[str, str]]]:
    return {name: imported_names(name, path) for name, path in product_modules().items() if name.split(".")[0] in DOORS}


def test_the_reader_finds_the_v1_endpoint_functions_and_the_doors_modules():
    endpoints = v1_endpoints()
    imports = door_imports()

    assert {"get_run", "list_runs", "cancel_run"} <= endpoints["runs.api"]
    assert {"runs.files_api", "runs.recipes.api", "judge.api", "browsers.api", "webhooks.api"} <= endpoints.keys()
    assert endpoints[API_ROOT] == {"current_workspace"}
    assert {
        "mcp_server.tools",
        "mcp_server.person_tools",
        "browser_use_v4.api",
        "browser_use_v4.files",
    } <= imports.keys()
    assert ("runs.reading", "find_run") in imports["mcp_server.tools"]


def test_each_way_of_reaching_an_endpoint_function_is_a_crossing():
    endpoints = {"runs.api": {"get_run"}, API_ROOT: {"current_workspace"}}
    imports = {
        "mcp_server.tools": {
            ("runs", "api"),  # from runs import api as runs_api
            ("runs.api", "run_out"),  # a helper of an endpoint module
            ("agent_platform.api", "current_workspace"),
            ("agent_platform.api", "ApiRequest"),  # allowed: the root's shared part
            ("runs.reading", "RunOut"),  # allowed: a shared module
        },
        "browser_use_v4.api": {("runs.api", ""), ("mcp_server.tools", "answer")},
    }

    assert crossings(imports, endpoints) == [
        "browser_use_v4.api: mcp_server.tools, another door",
        "browser_use_v4.api: runs.api, a v1 endpoint module",
        "mcp_server.tools: agent_platform.api.current_workspace, an endpoint function",
        "mcp_server.tools: runs.api, a v1 endpoint module",
        "mcp_server.tools: runs.api.run_out, a v1 endpoint module",
    ]


def test_mcp_and_v4_call_services_never_v1_endpoint_functions_nor_each_other():
    assert crossings(door_imports(), v1_endpoints()) == []
