import sys
def r(n):
    if n == 0:
        s = 0
        while True: s = (s * 31 + 7) % 1000003
    return r(n - 1) + 1
r(int(sys.argv[1]) - 2)  # <module> and r's 38 frames above it: 40 Python frames
