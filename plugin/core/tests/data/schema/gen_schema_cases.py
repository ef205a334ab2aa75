"""Writes schema_cases.json: random JSON Schema 2020-12 documents built from the keywords
toolseal supports, with instances and the verdicts of the Python `jsonschema` package
(an independent implementation). The Rust test `validation_agrees_with_reference` replays
them. Patterns, strings and multipleOf are kept to forms where Python's `re` and float
arithmetic agree with ECMAScript and exact decimals.

Regenerate (needs jsonschema >= 4.18):
    python3 gen_schema_cases.py > schema_cases.json
    python3 gen_schema_cases.py draft7 > schema_cases_draft7.json
"""
import json
import random
import sys

from jsonschema import Draft7Validator, Draft202012Validator

DRAFT7 = sys.argv[1:] == ["draft7"]

rng = random.Random(20261129)
STRINGS = ["", "a", "ab", "abc", "b1", "Zz", "日本", "x-y"]
KEYS = ["a", "b", "c", "x-y"]
PATTERNS = ["^a", "b", "[0-9]", "^[a-z]+$", "^(a|b)*$", "y$", "\\d", "^.{2}$"]
ALLOW_REF = False
TYPES = ["null", "boolean", "object", "array", "number", "integer", "string"]


def value(depth):
    kind = rng.randrange(6 if depth > 0 else 4)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, 1, 2, 3, -1, 1.0, 2.5, 10, 100])
    if kind == 2:
        return rng.choice(STRINGS)
    if kind == 3:
        return rng.choice([0, "a", None])
    if kind == 4:
        return [value(depth - 1) for _ in range(rng.randrange(4))]
    return {rng.choice(KEYS): value(depth - 1) for _ in range(rng.randrange(4))}


def schema(depth):
    if depth == 0 or rng.randrange(7) == 0:
        return rng.choice([True, False, {}])
    s = {}
    for _ in range(1 + rng.randrange(3)):
        k = rng.choice(KEYWORDS)
        s.update(k(depth - 1))
    return s


def sub(depth):
    return schema(depth)


KEYWORDS = [
    lambda d: {"type": rng.choice(TYPES)},
    lambda d: {"type": rng.sample(TYPES, 2)},
    lambda d: {"enum": [value(1) for _ in range(1 + rng.randrange(3))]},
    lambda d: {"const": value(1)},
    lambda d: {"minimum": rng.choice([0, 1, 2.5])},
    lambda d: {"maximum": rng.choice([1, 3, 10])},
    lambda d: {"exclusiveMinimum": rng.choice([0, 1])},
    lambda d: {"exclusiveMaximum": rng.choice([2, 10])},
    lambda d: {"multipleOf": rng.choice([1, 2, 5])},
    lambda d: {"minLength": rng.randrange(3)},
    lambda d: {"maxLength": rng.randrange(3)},
    lambda d: {"pattern": rng.choice(PATTERNS)},
    lambda d: {"items": sub(d)},
    lambda d: {"prefixItems": [sub(d) for _ in range(1 + rng.randrange(2))]},
    lambda d: {"contains": sub(d)},
    lambda d: {"contains": sub(d), "minContains": rng.randrange(3), "maxContains": 2},
    lambda d: {"minItems": rng.randrange(3)},
    lambda d: {"maxItems": rng.randrange(3)},
    lambda d: {"uniqueItems": True},
    lambda d: {"required": rng.sample(KEYS, 1 + rng.randrange(2))},
    lambda d: {"properties": {k: sub(d) for k in rng.sample(KEYS, 2)}},
    lambda d: {"additionalProperties": sub(d)},
    lambda d: {"properties": {"a": sub(d)}, "additionalProperties": False},
    lambda d: {"patternProperties": {rng.choice(["^a", "-", "^[bc]$"]): sub(d)}},
    lambda d: {"propertyNames": {"maxLength": 1}},
    lambda d: {"minProperties": rng.randrange(3)},
    lambda d: {"maxProperties": rng.randrange(3)},
    lambda d: {"dependentRequired": {"a": ["b"]}},
    lambda d: {"dependentSchemas": {"a": sub(d)}},
    lambda d: {"allOf": [sub(d) for _ in range(1 + rng.randrange(2))]},
    lambda d: {"anyOf": [sub(d) for _ in range(1 + rng.randrange(3))]},
    lambda d: {"oneOf": [sub(d) for _ in range(1 + rng.randrange(3))]},
    lambda d: {"not": sub(d)},
    lambda d: {"if": sub(d), "then": sub(d), "else": sub(d)},
    lambda d: {"$ref": "#/$defs/n"} if ALLOW_REF else {},
    lambda d: {"title": "t", "description": "d", "default": 1, "format": "email"},
]


DRAFT7_KEYWORDS = [
    lambda d: {"items": [sub(d) for _ in range(1 + rng.randrange(2))]},
    lambda d: {"items": [sub(d)], "additionalItems": sub(d)},
    lambda d: {"dependencies": {"a": ["b"], "b": sub(d)}},
    # Draft-07 ignores the siblings of $ref (toolseal applies them: stricter), so the ref
    # stands alone here.
    lambda d: {"allOf": [{"$ref": "#/definitions/n"}]} if ALLOW_REF else {},
]
DRAFT7_ONLY_2020 = {"prefixItems", "dependentRequired", "dependentSchemas", "minContains"}


def main():
    cases = []
    global ALLOW_REF, KEYWORDS
    if DRAFT7:
        ALLOW_REF = True
        probe = [k(1) for k in KEYWORDS]
        KEYWORDS = [k for k, p in zip(KEYWORDS, probe)
                    if not (DRAFT7_ONLY_2020 & set(p)) and "$ref" not in p] + DRAFT7_KEYWORDS
    dialect, defs, validator = (
        ("http://json-schema.org/draft-07/schema#", "definitions", Draft7Validator)
        if DRAFT7 else
        ("https://json-schema.org/draft/2020-12/schema", "$defs", Draft202012Validator))
    while len(cases) < (200 if DRAFT7 else 600):
        ALLOW_REF = False
        definition = schema(2)
        ALLOW_REF = True
        s = schema(3)
        if isinstance(s, dict):
            s["$schema"] = dialect
            s[defs] = {"n": definition}
        validator.check_schema(s)
        v = validator(s)
        instances = []
        for _ in range(6):
            i = value(3)
            instances.append([i, v.is_valid(i)])
        cases.append({"schema": s, "instances": instances})
    print("[")
    print(",\n".join(json.dumps(c, ensure_ascii=False, sort_keys=True) for c in cases))
    print("]")


main()
