"""Layers the build enforces (issue 57, point 4): lib/ is one static
library a layer (lib/meson.build), each compiled with its own folder and
the layers below on its include path. A file of a layer that includes a
header of a layer above it must not compile; one that includes its own
layer's or a lower one's must. Each layer's compile command is taken from
the build (compile_commands.json) and given a file of one include."""
import json
import os
import shlex
import subprocess

import pytest

from conftest import BUILD

# bottom to top, each with a header of its own
LAYERS = [("base", "shp_units.h"), ("core", "shp_qdisc.h"),
          ("pkt", "classify.h"), ("sched", "shp_link.h"),
          ("classes", "shp_classes.h"), ("conf", "config.h")]


def layer_command(layer):
    """A compile command of one of layer's files, and its directory."""
    with open(os.path.join(BUILD, "compile_commands.json")) as f:
        entries = json.load(f)
    for e in entries:
        if "/lib/%s/" % layer in os.path.normpath(
                os.path.join(e["directory"], e["file"])) and \
                "libshaper_%s" % layer in e["command"]:
            return shlex.split(e["command"]), e["directory"]
    raise AssertionError("no compile command of lib/%s in %s" % (
        layer, BUILD))


def compiles(layer, include, tmp_path):
    cmd, cwd = layer_command(layer)
    src = tmp_path / ("in_%s.c" % layer)
    src.write_text('#include "%s"\nint layer_probe;\n' % include)
    out, skip = [], False
    for a in cmd:   # no object, no dependency file: syntax only
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MQ", "-c"):
            skip = True
            continue
        if a == "-MD" or a.endswith(".c"):
            continue
        out.append(a)
    p = subprocess.run(out + ["-fsyntax-only", "-c", str(src)], cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    return p.returncode == 0, p.stderr


@pytest.mark.parametrize("low", range(len(LAYERS) - 1))
def test_an_include_that_climbs_does_not_build(low, tmp_path):
    layer = LAYERS[low][0]
    for high, header in LAYERS[low + 1:]:
        for include in (header, "%s/%s" % (high, header)):
            ok, err = compiles(layer, include, tmp_path)
            assert not ok, "lib/%s includes %s of %s and builds" % (
                layer, include, high)
            assert "No such file" in err, err


@pytest.mark.parametrize("top", range(len(LAYERS)))
def test_its_own_and_lower_layers_build(top, tmp_path):
    layer = LAYERS[top][0]
    for below, header in LAYERS[:top + 1]:
        ok, err = compiles(layer, header, tmp_path)
        assert ok, "lib/%s cannot include %s of %s: %s" % (
            layer, header, below, err)
