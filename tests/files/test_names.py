"""File names from outside (a page's suggested name, an upload's) made safe to store, show and send."""

from runs.files import NAME_MAX_BYTES, sanitize_name


def test_a_plain_name_is_kept():
    assert sanitize_name("invoice-2026-11.pdf") == "invoice-2026-11.pdf"


def test_path_traversal_keeps_only_the_last_component():
    assert sanitize_name("../../etc/passwd") == "passwd"
    assert sanitize_name("..\\..\\windows\\system.ini") == "system.ini"
    assert sanitize_name("/abs/path/report.csv") == "report.csv"


def test_dot_names_are_not_kept():
    assert sanitize_name("..") == "file"
    assert sanitize_name(".") == "file"
    assert sanitize_name("...hidden...") == "hidden"


def test_control_and_format_characters_are_removed():
    assert sanitize_name("in\x00voi\nce\r.pdf") == "invoice.pdf"
    # a right-to-left override would make "txt.exe" read as "exe.txt"
    assert sanitize_name("report\u202etxt.exe") == "reporttxt.exe"


def test_reserved_characters_are_replaced():
    assert sanitize_name('a<b>c:d"e|f?g*.txt') == "a_b_c_d_e_f_g_.txt"


def test_a_very_long_name_is_cut_to_255_bytes_keeping_its_extension():
    name = sanitize_name("é" * 400 + ".pdf")
    assert len(name.encode()) <= NAME_MAX_BYTES
    assert name.endswith(".pdf")
    assert name.startswith("éé")
    long_extension = sanitize_name("a" * 300 + "." + "b" * 40)
    assert len(long_extension.encode()) <= NAME_MAX_BYTES


def test_an_empty_or_missing_name_becomes_file():
    assert sanitize_name("") == "file"
    assert sanitize_name("   ") == "file"
    assert sanitize_name(None) == "file"
    assert sanitize_name("\x00\x01") == "file"
