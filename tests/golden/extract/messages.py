"""Fixture: every message shape the extractor must render byte for byte.

Each case_* function reports exactly one message with concrete values; the render test runs
them all. Written for kverr's tests; it imitates the shapes of a server-args validator.
"""

import logging
import sys
import warnings
from logging import getLogger as make_logger

log = logging.getLogger(__name__)
audit = make_logger("audit")
MODES = ["eager", "lazy", "off"]
PAIRS = ("a", "b")
LIMITS = {"tp": 8, "pp": 4}
PREFIX = "[kverr]"
BACKENDS = {"triton", "fa3"}
RED = "\033[31m"
RESET = "\033[0m"
GROWING = ["x"]
GROWING.append("y")


def _red(text):
    return f"\033[1;31m{text}\033[0m"


def case_plain():
    raise ValueError("a plain message.")


def case_implicit_concat():
    raise ValueError(
        "first half of a long message, "
        'second half with "quotes" '
        r"and a raw \d part."
    )


def case_fstring_nested_quotes(mode="fast"):
    raise ValueError(f"mode {mode!r} is not in {', '.join(['x', 'y'])}; got {f'{mode}-x'}")


def case_fstring_equals_and_spec(ratio=0.12345, size=7):
    raise ValueError(f"bad {ratio=} {size = } {ratio=:.2f} {size:>4} {ratio:.1%} {size!s:<3}|")


def case_fstring_escapes(n=3):
    raise ValueError(f"tab\there {{literal}} newline\n{n}\N{BULLET}")


def case_percent_single(n=5):
    raise RuntimeError("got %d workers" % n)


def case_percent_tuple():
    name, ratio = "tp", 0.5
    raise RuntimeError("%s ratio %.3f is %r, 100%% sure" % (name, ratio, name))


def case_percent_mapping(size=12):
    raise RuntimeError("size=%(size)05d name=%(name)s" % {"size": size, "name": "pp"})


def case_format_auto():
    a, b = 1, "two"
    raise ValueError("a={} b={!r}".format(a, b))


def case_format_positional_keyword():
    a, b = 1.5, "two"
    raise ValueError("{1} then {0:.2f} then {who}".format(a, b, who="me"))


def case_plus_and_str(count=4):
    raise ValueError("count is " + str(count) + " and mode is " + repr("m"))


def case_local_message(got="lazy"):
    msg = f"unsupported mode {got}"
    msg += "; pick another"
    raise ValueError(msg)


def _branchy(mode):
    if mode == 1:
        msg = "first text"
    elif mode == 2:
        msg = "second text"
    else:
        msg = "third text"
    msg = msg + "."
    raise ValueError(msg)


def case_branch_one():
    _branchy(1)


def case_branch_two():
    _branchy(2)


def case_branch_three():
    _branchy(3)


def case_module_constants():
    raise ValueError(f"{PREFIX} mode must be one of {MODES}, pairs {PAIRS!r}, limits {LIMITS}")


def case_sorted_set_constant():
    raise ValueError(f"backend must be one of {sorted(BACKENDS)}")


def case_function_constant(got="z"):
    allowed = ["x", "y"]
    assert got in allowed, f"expected one of {allowed}, got {got}"


def case_mutated_constant_is_placeholder():
    raise ValueError(f"growing list is {GROWING}")


def case_ansi_constants():
    log.warning(f"{RED}deprecated option{RESET}")


def case_ansi_wrapper():
    log.warning(_red("deprecated: use the new flag"))


def case_lazy_logging(n=3):
    log.warning("retrying %d times for %s", n, "pp")


def case_error_levels(what="disk"):
    audit.error("an error happened: %s", what)


def case_info():
    log.info("using the default backend.")


def case_warnings_warn(version="0.5"):
    warnings.warn(f"flag is deprecated since {version}", DeprecationWarning, stacklevel=1)


def case_sys_exit():
    sys.exit("cannot continue without a model path")


def case_system_exit():
    raise SystemExit("fatal: bad config")


def case_assert_plain(x=0):
    assert x > 0, "x must be positive"


def case_conditional_expression(many=True):
    raise ValueError("too many" if many else "too few")


def case_percent_tuple_variable(pair=("tp", 4)):
    raise ValueError("%s=%d is not allowed" % pair)


def case_join_pieces(name="pp", size=2):
    raise ValueError(" ".join(["bad", f"{name}={size}", PREFIX]))


def case_format_nested_constant(size=3):
    raise ValueError("{} of {}".format(size, MODES))


def case_parameter_set_again_in_another_branch(low=4, high=2, lookup=True):
    # a parameter is what the caller passed, even when one branch sets it once to a literal
    if lookup:
        if low > high:
            raise ValueError(f"{low=} cannot be larger than {high=}")
    else:
        high = 0
