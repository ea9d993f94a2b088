"""A local-only repository rule that exposes Debian's libraries and tools to Bazel.

Runs pkg-config at fetch time (no network); each entry becomes a cc_library with the link
flags pkg-config gives. Words starting with '-' are passed through as literal linker flags.
"""

def _system_libs_repo_impl(rctx):
    lines = ['package(default_visibility = ["//visibility:public"])', ""]
    for name, modules in rctx.attr.libs.items():
        words = [w for w in modules.split(" ") if w]
        extra = [w for w in words if w.startswith("-")]
        mods = [w for w in words if not w.startswith("-")]
        res = rctx.execute(["pkg-config", "--libs"] + mods)
        if res.return_code != 0:
            fail("pkg-config --libs %s failed: %s" % (modules, res.stderr))
        opts = []
        for flag in extra + res.stdout.strip().split(" "):
            if flag and flag not in opts:
                opts.append(flag)
        lines.append("cc_library(name = %r, linkopts = %r)" % (name, opts))
    for tool in rctx.attr.tools:
        rctx.symlink("/usr/bin/" + tool, "bin/" + tool)
    lines.append("exports_files(%r)" % ["bin/" + t for t in rctx.attr.tools])
    rctx.file("BUILD.bazel", "\n".join(lines) + "\n")
    rctx.file("WORKSPACE", "")

system_libs_repo = repository_rule(
    implementation = _system_libs_repo_impl,
    attrs = {"libs": attr.string_dict(), "tools": attr.string_list()},
    local = True,
)
