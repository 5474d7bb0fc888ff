"""What the student's code printed, kept up to a limit as it comes, sent with each reply and read back with care."""

import io

OUTPUT_LIMIT = 100_000  # characters of printed output kept per call, and per cell of the feedback page
TRUNCATED = f"\n... output truncated: the code printed more than {OUTPUT_LIMIT:,} characters ...\n"


class Printed:
    """What code printed, in order, as [[stream name, text]] ("stdout" or "stderr"), up to `limit` characters in all:
    the rest is dropped as it comes, so printing gigabytes costs no memory. The worker sends its `parts()` with each
    reply; the grader reads them back with `extend`, which keeps only well-formed parts (they are the student's)."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.kept, self.size, self.limit, self.truncated = [], 0, limit, False

    def add(self, name: str, text: str) -> None:
        room = self.limit - self.size
        if len(text) > room:
            text, self.truncated = text[: max(room, 0)], True
        if not text:
            return
        if self.kept and self.kept[-1][0] == name:
            self.kept[-1][1] += text
        else:
            self.kept.append([name, text])
        self.size += len(text)

    def extend(self, parts: object) -> None:
        "Add what the other side sent: [[name, text]] (anything else in it is dropped)."
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, list) and len(part) == 2 and isinstance(part[1], str):
                name = "stderr" if part[0] == "stderr" else "stdout"
                self.add(name, part[1].encode("utf-8", "replace").decode("utf-8"))  # (no lone surrogate survives)

    def parts(self) -> list:
        return [list(p) for p in self.kept] + ([["stdout", TRUNCATED]] if self.truncated else [])

    def stream(self, name: str) -> io.TextIOBase:
        "A file object for sys.stdout or sys.stderr that adds what is written to this."
        return _Stream(self, name)


class _Stream(io.TextIOBase):
    def __init__(self, printed: Printed, name: str) -> None:
        super().__init__()
        self.printed, self.name_ = printed, name

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.printed.add(self.name_, text)
        return len(text)

    def writable(self) -> bool:
        return True
