# The interpreter's own view, for PythonRuntimeTest and LineTableTest: run by a CPython under test, it prints
#   layout NAME OFFSET_OK          checks of the package's layout table against this process (ctypes)
#   code ID QUALNAME FIRSTLINE FILE   code objects of stdlib modules and of this file
#   line ID INDEX LINE              each code unit's line as co_positions() gives it (0: none)
#   table ID HEX                    the code object's co_linetable
#   notcode ID                      an object that is not a code object
# then "ready" and waits, so that a reader can look at its memory.
import ctypes, sys, threading, importlib

mode = sys.argv[1]


def walk(co, seen):
    if id(co) in seen:
        return
    seen[id(co)] = co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            walk(c, seen)


class Outer:
    def method(self):
        def inner():
            return 1
        return inner


seen = {}
for name in sys.argv[2:]:
    m = importlib.import_module(name)
    walk(compile(open(m.__file__).read(), m.__file__, "exec"), seen)
walk(Outer.method.__code__, seen)
walk(Outer().method().__code__, seen)
def qualname(co):
    return co.co_qualname if hasattr(co, "co_qualname") else co.co_name  # 3.9, 3.10: no qualified name in code


def code_unit_lines(co):
    """(index, line) of each instruction: code units (3.10+) or byte offsets (3.9), as the interpreter says."""
    if hasattr(co, "co_positions"):
        return [(i, p[0] or 0) for i, p in enumerate(co.co_positions())]
    import dis
    starts = list(dis.findlinestarts(co))
    out = []
    for offset in range(0, len(co.co_code), 2):
        line = 0
        for o, l in starts:
            if o <= offset:
                line = l
        out.append((offset, line))
    return out


for co in seen.values():
    print("code", id(co), qualname(co), co.co_firstlineno, co.co_filename)
    if mode == "lines":
        print("table", id(co), (co.co_linetable if sys.version_info >= (3, 10) else co.co_lnotab).hex())
        for i, line in code_unit_lines(co):
            print("line", id(co), i, line)
keep = [1, 2, 3]
print("notcode", id(keep))
api = ctypes.pythonapi
api.PyInterpreterState_Get.restype = ctypes.c_void_p
api.PyThreadState_Get.restype = ctypes.c_void_p
print("runtime", ctypes.addressof(ctypes.c_char.in_dll(api, "_PyRuntime")), api.PyInterpreterState_Get(),
      api.PyThreadState_Get(), threading.get_ident())


def wait_here():
    # This thread's frames as the interpreter sees them, innermost first: wait_here waits on the line after the next.
    print("frame", id(sys._getframe().f_code), qualname(sys._getframe().f_code), sys._getframe().f_lineno + 1)
    print("ready", flush=True); sys.stdin.readline()


def outer():
    f = sys._getframe()
    print("frame", id(f.f_code), qualname(f.f_code), f.f_lineno + 2)
    print("frame", id(f.f_back.f_code), qualname(f.f_back.f_code), f.f_back.f_lineno)
    return wait_here()


outer()
