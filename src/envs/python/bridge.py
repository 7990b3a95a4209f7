"""terrarium's Python bridge: hosts environment classes and runs their methods for the TypeScript side.

Protocol: one JSON object per line on stdin, one JSON answer per line on stdout. The real stdout is kept
for the protocol; environment code that prints writes to stderr instead, so it cannot corrupt a reply.
Standard library only.
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
import random
import re
import sys
import traceback
import types
import typing

PROTOCOL = sys.stdout
sys.stdout = sys.stderr  # anything environment code prints goes to stderr

CLASSES = {}    # env key -> class
INSTANCES = {}  # instance id -> object
STATE_ATTRS = {}  # instance id -> list of attribute names, or None for all public attributes


def to_json(value, path="", ancestors=None):
    """A JSON-ready copy of a Python value: objects become their public attributes, cycles become refs."""
    if ancestors is None:
        ancestors = {}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return float(value) if value.is_finite() else str(value)
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


def state_of(instance_id):
    obj = INSTANCES[instance_id]
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


def tools_of(cls):
    tools = []
    for name, member in inspect.getmembers(cls, predicate=inspect.isfunction):
        if name.startswith("_"):
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
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        source = ""
    return {"tools": tools_of(cls), "source": source, "doc": inspect.cleandoc(cls.__doc__ or "")}


def op_create(message):
    cls = CLASSES[message["env"]]
    init = message.get("init") or {}
    method = init.get("method", "__init__")
    config = init.get("config")
    if method == "__init__":
        obj = cls(config) if config is not None else cls()
    else:
        obj = cls()
        getattr(obj, method)(config) if config is not None else getattr(obj, method)()
    INSTANCES[message["instance"]] = obj
    STATE_ATTRS[message["instance"]] = message.get("stateAttrs")
    return {"state": state_of(message["instance"])}


def failed_result(result):
    """Environments report a rejected call by returning an error instead of raising."""
    if isinstance(result, dict):
        if result.get("success") is False:
            return True
        if "error" in result and "success" not in result:
            return True
    return False


def op_call(message):
    instance_id = message["instance"]
    obj = INSTANCES[instance_id]
    method = getattr(obj, message["name"], None)
    if method is None or message["name"].startswith("_") or not callable(method):
        return {"ok": False, "error": "no tool named %r" % message["name"], "state": state_of(instance_id)}
    if message.get("seed") is not None:
        # Seeded runs (and replays after a crash) see the same random numbers.
        random.seed(message["seed"])
    try:
        result = method(**(message.get("arguments") or {}))
    except Exception:
        return {"ok": False, "error": traceback.format_exc(), "state": state_of(instance_id)}
    return {
        "ok": not failed_result(result),
        "result": to_json(result),
        "text": str(result),
        "state": state_of(instance_id),
    }


def op_state(message):
    return {"state": state_of(message["instance"])}


def op_fork(message):
    INSTANCES[message["new"]] = copy.deepcopy(INSTANCES[message["instance"]])
    STATE_ATTRS[message["new"]] = STATE_ATTRS.get(message["instance"])
    return {"state": state_of(message["new"])}


def op_dispose(message):
    INSTANCES.pop(message["instance"], None)
    STATE_ATTRS.pop(message["instance"], None)
    return {}


def op_crash(message):
    os._exit(70)  # for tests: a crash of the bridge process


OPERATIONS = {
    "ping": lambda message: {"pid": os.getpid()},
    "load": op_load,
    "create": op_create,
    "call": op_call,
    "state": op_state,
    "fork": op_fork,
    "dispose": op_dispose,
    "crash": op_crash,
}


def main():
    for line in io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8"):
        if not line.strip():
            continue
        message = json.loads(line)
        try:
            reply = OPERATIONS[message["op"]](message)
            reply["id"] = message["id"]
        except Exception:
            reply = {"id": message.get("id"), "failure": traceback.format_exc()}
        PROTOCOL.write(json.dumps(reply, default=str) + "\n")
        PROTOCOL.flush()


if __name__ == "__main__":
    main()
