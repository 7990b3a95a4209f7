"""terrarium's Python bridge: hosts environment classes and runs their methods for the TypeScript side.

Protocol: one JSON object per line on stdin, one JSON answer per line on stdout. At start the bridge moves
the protocol to private copies of those descriptors and points file descriptors 0 and 1 at /dev/null and
stderr, so environment code (print, sys.stdout.write, os.write(1, ...), child processes, input()) can
neither corrupt a reply nor read a request. Standard library only.

Optional class methods: get_state() returns the state (instead of the public attributes) and
set_state(state) restores it; with both, an instance can be placed at any recorded state.
"""

import copy
import dataclasses
import datetime
import decimal
import enum
import importlib
import importlib.util
import inspect
import io
import json
import math
import os
import pickle
import random
import re
import sys
import traceback
import types
import typing

def take_protocol_channel():
    """Private copies of stdin/stdout for the protocol; fds 0 and 1 become /dev/null and stderr."""
    sys.stdout.flush()
    reader = os.fdopen(os.dup(0), "rb", buffering=0)
    writer = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, "r")
    sys.stdout = sys.stderr
    return reader, writer


PROTOCOL_IN, PROTOCOL = take_protocol_channel()

# Integers beyond this are not exact as JSON numbers once JavaScript reads them (IEEE doubles).
MAX_SAFE_INTEGER = 2 ** 53 - 1

CLASSES = {}    # env key -> class
CAPABILITIES = {}  # env key -> {"getState": bool, "setState": bool}
INSTANCE_ENV = {}  # instance id -> env key
INSTANCES = {}  # instance id -> object
STATE_ATTRS = {}  # instance id -> list of attribute names, or None for all public attributes


class Unrepresentable(Exception):
    """A value JSON (as JavaScript reads it) cannot hold exactly; refused rather than silently changed."""

    def __init__(self, path, what, why):
        super().__init__("%s at %s cannot be sent as JSON exactly: %s" % (what, path or "/", why))


def to_json(value, path="", ancestors=None):
    """A JSON-ready copy of a Python value: objects become their public attributes, cycles become refs.

    Numbers that would change on the way (integers beyond 2**53 - 1, inf, nan, decimals with more digits
    than a double) raise Unrepresentable instead.
    """
    if ancestors is None:
        ancestors = {}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise Unrepresentable(path, "the integer %s" % shorten(str(value)),
                                  "JSON numbers hold integers exactly only up to 2**53 - 1 (JavaScript reads "
                                  "them as doubles); return it as a string")
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Unrepresentable(path, "the float %s" % value,
                                  "JSON has no infinity or NaN; return a string or None")
        return value
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise Unrepresentable(path, "the decimal %s" % value, "JSON has no infinity or NaN")
        as_float = float(value)
        if decimal.Decimal(repr(as_float)) != value:
            raise Unrepresentable(path, "the decimal %s" % shorten(str(value)),
                                  "it has more digits than a JSON number keeps; return it as a string")
        return as_float
    if isinstance(value, enum.Enum):
        return to_json(value.value, path, ancestors)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", errors="replace")
    if callable(value) and not hasattr(value, "__dict__"):
        return None
    key = id(value)
    if key in ancestors:
        # A back-reference (a child pointing at its parent): say where, instead of recursing forever.
        return {"$ref": "#" + ancestors[key]}
    ancestors[key] = path
    try:
        if isinstance(value, dict):
            return {str(k): to_json(v, path + "/" + escape(str(k)), ancestors) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [to_json(v, "%s/%d" % (path, i), ancestors) for i, v in enumerate(value)]
        if isinstance(value, (set, frozenset)):
            items = [to_json(v, "%s/%d" % (path, i), ancestors) for i, v in enumerate(value)]
            return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return {k: to_json(v, path + "/" + escape(k), ancestors) for k, v in fields.items()}
        if hasattr(value, "__dict__"):
            return {
                k: to_json(v, path + "/" + escape(k), ancestors)
                for k, v in vars(value).items()
                if not k.startswith("_") and not callable(v)
            }
        return str(value)
    finally:
        del ancestors[key]


def escape(token):
    return token.replace("~", "~0").replace("/", "~1")


def shorten(text):
    return text if len(text) <= 40 else text[:18] + "..." + text[-18:]


def instance(instance_id):
    if instance_id not in INSTANCES:
        raise LookupError("no instance %r in this bridge" % instance_id)
    return INSTANCES[instance_id]


def state_of(instance_id):
    obj = instance(instance_id)
    if CAPABILITIES.get(INSTANCE_ENV.get(instance_id), {}).get("getState"):
        return to_json(obj.get_state())
    names = STATE_ATTRS.get(instance_id)
    attrs = vars(obj)
    if names is None:
        names = [k for k, v in attrs.items() if not k.startswith("_") and not callable(v)]
    return {name: to_json(attrs.get(name), "/" + escape(name)) for name in names}


def load_class(message):
    for entry in reversed(message.get("pythonPath") or []):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    if message.get("file"):
        path = message["file"]
        name = "terrarium_env_" + re.sub(r"\W", "_", os.path.abspath(path))
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError("cannot load %s" % path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(message["module"])
    cls = getattr(module, message["class"], None)
    if cls is None or not inspect.isclass(cls):
        raise LookupError("no class %r in %s" % (message["class"], message.get("file") or message["module"]))
    return module, cls


# --- tool schemas from signatures and docstrings -------------------------------------------------

def schema_of(annotation):
    if annotation is inspect.Parameter.empty or annotation is typing.Any:
        return {}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, getattr(types, "UnionType", typing.Union)):
        options = [schema_of(a) for a in args if a is not type(None)]
        nullable = any(a is type(None) for a in args)
        base = options[0] if len(options) == 1 else {"anyOf": options}
        if nullable:
            if "type" in base and isinstance(base["type"], str):
                return dict(base, type=[base["type"], "null"])
            return {"anyOf": [base, {"type": "null"}]}
        return base
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple, set, frozenset):
        schema = {"type": "array"}
        if args and args[0] is not Ellipsis:
            schema["items"] = schema_of(args[0])
        return schema
    if origin is dict or annotation is dict:
        return {"type": "object"}
    simple = {int: "integer", float: "number", str: "string", bool: "boolean"}
    if annotation in simple:
        return {"type": simple[annotation]}
    return {}


def doc_sections(doc):
    """The summary of a docstring and the descriptions of its arguments (Google or reST style)."""
    doc = inspect.cleandoc(doc or "")
    summary = doc.split("\n\n")[0].strip() if doc else ""
    params = {}
    for match in re.finditer(r"^\s*:param\s+(\w+):\s*(.+)$", doc, re.M):
        params[match.group(1)] = match.group(2).strip()
    args_block = re.search(r"^(?:Args|Arguments|Parameters):\s*\n((?:[ \t]+.+\n?)+)", doc, re.M)
    if args_block:
        for match in re.finditer(r"^\s+(\w+)(?:\s*\([^)]*\))?:\s*(.+)$", args_block.group(1), re.M):
            params.setdefault(match.group(1), match.group(2).strip())
    summary = re.split(r"\n\s*(?:Args|Arguments|Parameters|Returns|Raises):", summary)[0].strip()
    return summary, params


STATE_METHODS = ("get_state", "set_state")


def tools_of(cls):
    tools = []
    for name, member in inspect.getmembers(cls, predicate=inspect.isfunction):
        if name.startswith("_") or name in STATE_METHODS:
            continue
        signature = inspect.signature(member)
        summary, param_docs = doc_sections(member.__doc__)
        properties = {}
        required = []
        for index, (pname, param) in enumerate(signature.parameters.items()):
            if index == 0 and pname in ("self", "cls"):
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            schema = schema_of(param.annotation)
            if pname in param_docs:
                schema["description"] = param_docs[pname]
            if param.default is inspect.Parameter.empty:
                required.append(pname)
            else:
                try:
                    json.dumps(param.default)
                    schema["default"] = param.default
                except (TypeError, ValueError):
                    pass
            properties[pname] = schema
        input_schema = {"type": "object", "properties": properties}
        if required:
            input_schema["required"] = required
        tools.append({"name": name, "description": summary, "parameters": input_schema})
    return tools


# --- operations -------------------------------------------------------------------------------------

def op_load(message):
    module, cls = load_class(message)
    CLASSES[message["env"]] = cls
    capabilities = {
        "getState": callable(getattr(cls, "get_state", None)),
        "setState": callable(getattr(cls, "set_state", None)),
    }
    CAPABILITIES[message["env"]] = capabilities
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        source = ""
    return {
        "tools": tools_of(cls),
        "source": source,
        "doc": inspect.cleandoc(cls.__doc__ or ""),
        "capabilities": capabilities,
    }


def op_create(message):
    cls = CLASSES[message["env"]]
    init = message.get("init") or {}
    method = init.get("method", "__init__")
    has_config = "config" in init and init["config"] is not None
    config = init.get("config")
    if method == "__init__":
        obj = cls(config) if has_config else cls()
    else:
        obj = cls()
        getattr(obj, method)(config) if has_config else getattr(obj, method)()
    INSTANCES[message["instance"]] = obj
    INSTANCE_ENV[message["instance"]] = message["env"]
    STATE_ATTRS[message["instance"]] = message.get("stateAttrs")
    return {"state": state_of(message["instance"])}


def op_set_state(message):
    instance(message["instance"]).set_state(message["state"])
    return {"state": state_of(message["instance"])}


def failed_result(result):
    """Environments report a rejected call by returning an error instead of raising."""
    if isinstance(result, dict):
        if result.get("success") is False:
            return True
        if "error" in result and "success" not in result:
            return True
    return False


def snapshot(obj):
    """A way back to obj as it is now: pickled bytes (cheapest), a deep copy, or None if neither works."""
    try:
        return ("pickle", pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:
        pass
    try:
        return ("copy", copy.deepcopy(obj))
    except Exception:
        return None


def restore(instance_id, saved):
    """Puts the instance back as it was before a failed call; False when there was no snapshot."""
    if saved is None:
        return False
    kind, data = saved
    try:
        INSTANCES[instance_id] = pickle.loads(data) if kind == "pickle" else data
        return True
    except Exception:
        return False


def op_call(message):
    instance_id = message["instance"]
    obj = instance(instance_id)
    method = getattr(obj, message["name"], None)
    if (method is None or message["name"].startswith("_") or message["name"] in STATE_METHODS
            or not callable(method)):
        return {"ok": False, "error": "no tool named %r" % message["name"], "state": state_of(instance_id),
                "restored": True}
    if message.get("seed") is not None:
        # Seeded runs (and replays after a crash or a rebuild) see the same random numbers.
        random.seed(message["seed"])
    # A failed call must leave the instance exactly as it was, whatever it mutated before failing.
    saved = snapshot(obj)
    try:
        result = method(**(message.get("arguments") or {}))
    except BaseException:  # SystemExit from tool code is a failed call too, not the end of the bridge
        error = traceback.format_exc()
        restored = restore(instance_id, saved)
        return {"ok": False, "error": error, "state": state_of(instance_id) if restored else None,
                "restored": restored}
    part = "result"
    try:
        result_json = to_json(result)
        part = "state"
        state_json = state_of(instance_id)
    except Unrepresentable as problem:
        restored = restore(instance_id, saved)
        return {"ok": False, "error": "the call's %s was refused: %s" % (part, problem),
                "state": state_of(instance_id) if restored else None, "restored": restored}
    limit = message.get("maxResultBytes")
    if limit is not None:
        # Refused here, before it is sent: a huge result never crosses the pipe (ASCII JSON: chars = bytes).
        size = len(json.dumps(result_json, allow_nan=False))
        if size > limit:
            restored = restore(instance_id, saved)
            return {"ok": False, "tooLarge": True, "size": size,
                    "error": "the call's result is %d bytes of JSON, more than the limit of %d (maxResultBytes)"
                             % (size, limit),
                    "state": state_of(instance_id) if restored else None, "restored": restored}
    text = str(result)
    reply = {"ok": not failed_result(result), "result": result_json, "state": state_json}
    if limit is None or len(text) <= limit:
        reply["text"] = text
    if not reply["ok"]:
        # A returned failure is a failed step too: whatever the method changed before returning is undone.
        reply["restored"] = restore(instance_id, saved)
        if reply["restored"]:
            reply["state"] = state_of(instance_id)
    return reply


def op_state(message):
    return {"state": state_of(message["instance"])}


def op_fork(message):
    INSTANCES[message["new"]] = copy.deepcopy(instance(message["instance"]))
    STATE_ATTRS[message["new"]] = STATE_ATTRS.get(message["instance"])
    INSTANCE_ENV[message["new"]] = INSTANCE_ENV.get(message["instance"])
    return {"state": state_of(message["new"])}


def op_dispose(message):
    INSTANCES.pop(message["instance"], None)
    STATE_ATTRS.pop(message["instance"], None)
    INSTANCE_ENV.pop(message["instance"], None)
    return {}


def op_crash(message):
    os._exit(70)  # for tests: a crash of the bridge process


OPERATIONS = {
    "ping": lambda message: {"pid": os.getpid()},
    "load": op_load,
    "create": op_create,
    "set_state": op_set_state,
    "call": op_call,
    "state": op_state,
    "fork": op_fork,
    "dispose": op_dispose,
    "crash": op_crash,
}


def main():
    for line in io.TextIOWrapper(PROTOCOL_IN, encoding="utf-8"):
        if not line.strip():
            continue
        message = json.loads(line)
        try:
            reply = OPERATIONS[message["op"]](message)
            reply["id"] = message["id"]
            text = json.dumps(reply, default=str, allow_nan=False)
        except Exception:
            text = json.dumps({"id": message.get("id"), "failure": traceback.format_exc()})
        PROTOCOL.write(text + "\n")
        PROTOCOL.flush()


if __name__ == "__main__":
    main()
