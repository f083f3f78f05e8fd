"""Safe intake of contributed code (contributions/intake.py): hostile archives and git repositories are refused
naming the member, URL or limit; good ones read back byte-identical; nothing lands outside the quarantine."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import git
import pytest

from contributions import intake
from contributions.intake import (
    IntakeError,
    IntakeLimits,
    intake_archive,
    intake_git,
    intake_write,
    quarantine_folder,
    quarantine_root,
)
from researchcodebench import outbound
from tests.contributions.conftest import EXAMPLES, all_files

LIMITS = IntakeLimits(
    max_bytes=50 * 1024 * 1024,
    max_files=200,
    max_member_bytes=10 * 1024 * 1024,
    max_ratio=100.0,
    git_timeout_s=60.0,
    allow_file_urls=True,
)
AUTHOR = git.Actor("Fixture", "fixture@example.invalid")


def limits(**changes) -> IntakeLimits:
    return IntakeLimits(**{**LIMITS.__dict__, **changes})


def make_zip(entries: list[tuple[str | zipfile.ZipInfo, bytes]]) -> io.BytesIO:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    out.seek(0)
    return out


def tar_member(name: str, data: bytes = b"", **fields) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in fields.items():
        setattr(info, key, value)
    return info, data


def make_tar(members: list[tuple[tarfile.TarInfo, bytes]], mode: str = "w:gz") -> io.BytesIO:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode) as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if info.isreg() else None)
    out.seek(0)
    return out


def refused(filename: str, stream, lim: IntakeLimits = LIMITS) -> str:
    with pytest.raises(IntakeError) as caught:
        intake_archive(filename=filename, stream=stream, limits=lim)
    assert caught.value.field == "archive"
    return str(caught.value)


# --- archives: names --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../x.py", "task/../../x.py", "task/.."])
def test_rejects_a_zip_slip_member_naming_it(name):
    message = refused("task.zip", make_zip([("task/ok.py", b"x = 1\n"), (name, b"boom")]))
    assert message == f"task.zip: {name}: path leaves the folder ('..')"


@pytest.mark.parametrize("name", ["/etc/x.py", "C:/x.py", "c:x.py"])
def test_rejects_absolute_paths_in_zip_and_tar(name):
    assert refused("t.zip", make_zip([(name, b"x")])) == f"t.zip: {name}: absolute path"
    assert refused("t.tar.gz", make_tar([tar_member(name, b"x")])).endswith("absolute path")


def test_rejects_backslashes_and_control_characters_in_names():
    assert "backslash" in refused("t.zip", make_zip([("..\\..\\evil.py", b"x")]))
    assert "control character" in refused("t.tar", make_tar([tar_member("a\nb.py", b"x")], mode="w"))


def test_rejects_duplicate_members_and_names_that_differ_only_in_case():
    with pytest.warns(UserWarning, match="Duplicate name"):
        twice = make_zip([("t/a.py", b"1"), ("t/a.py", b"2")])
    assert refused("t.zip", twice) == "t.zip: t/a.py: duplicate member"
    assert refused("t.tar.gz", make_tar([tar_member("a.py", b"1"), tar_member("./a.py", b"2")])).endswith(
        "a.py: duplicate member"
    )
    assert refused("t.zip", make_zip([("Model.py", b"1"), ("model.py", b"2")])) == (
        "t.zip: model.py: same name as Model.py but for case"
    )


def test_rejects_a_name_that_is_both_a_file_and_a_folder():
    assert (
        refused("t.zip", make_zip([("t/a", b"1"), ("t/a/b.py", b"2")]))
        == "t.zip: t/a: both a file and a folder"
    )


# --- archives: member types -----------------------------------------------------------------------------


def test_rejects_a_symlink_in_a_zip():
    link = zipfile.ZipInfo("task/passwd.py")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    message = refused("task.zip", make_zip([("task/ok.py", b"x"), (link, b"/etc/passwd")]))
    assert message.startswith("task.zip: task/passwd.py: symbolic link")


@pytest.mark.parametrize(
    ("member", "expected"),
    [
        (
            tar_member("t/passwd", type=tarfile.SYMTYPE, linkname="/etc/passwd"),
            "symbolic link (to /etc/passwd)",
        ),
        (tar_member("t/hard.py", type=tarfile.LNKTYPE, linkname="t/ok.py"), "hard link (to t/ok.py)"),
        (tar_member("t/null", type=tarfile.CHRTYPE, devmajor=1, devminor=3), "device file"),
        (tar_member("t/disk", type=tarfile.BLKTYPE, devmajor=8, devminor=0), "device file"),
        (tar_member("t/pipe", type=tarfile.FIFOTYPE), "fifo"),
    ],
)
def test_rejects_links_devices_and_fifos_in_a_tar(member, expected):
    message = refused("t.tar.gz", make_tar([tar_member("t/ok.py", b"x = 1\n"), member]))
    assert message.startswith(f"t.tar.gz: {member[0].name}: {expected}")


def test_rejects_native_modules_and_zip_imports():
    assert "native modules" in refused("t.zip", make_zip([("t/fast.so", b"\x7fELF...")]))
    assert "native modules" in refused("t.zip", make_zip([("t/vendored.whl", b"PK")]))
    assert "native executables" in refused("t.zip", make_zip([("t/tool", b"\x7fELF\x02\x01\x01")]))


# --- archives: limits -----------------------------------------------------------------------------------


def zeros_zip(megabytes: int) -> io.BytesIO:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("bomb.txt", "w") as member:
            for _ in range(megabytes):
                member.write(bytes(1024 * 1024))
    out.seek(0)
    return out


def test_refuses_a_zip_bomb_on_the_ratio_limit_without_inflating_it():
    bomb = zeros_zip(100)  # about 100 KB that inflate to 100 MB
    assert len(bomb.getvalue()) < 200 * 1024
    roomy = limits(max_bytes=500 * 1024 * 1024, max_member_bytes=500 * 1024 * 1024)
    message = refused("bomb.zip", bomb, roomy)
    # Refused on the ratio, with every size limit roomy enough for the whole 100 MB.
    assert (
        message
        == "bomb.zip: bomb.txt: the archive expands more than 100 times its size (the compression-ratio limit)"
    )


def test_refuses_a_tar_gz_bomb_on_the_ratio_limit():
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=9) as archive:
        info = tarfile.TarInfo("bomb.txt")
        info.size = 100 * 1024 * 1024
        archive.addfile(info, io.BytesIO(bytes(info.size)))
    out.seek(0)
    roomy = limits(max_bytes=500 * 1024 * 1024, max_member_bytes=500 * 1024 * 1024)
    assert "compression-ratio limit" in refused("bomb.tar.gz", out, roomy)


def test_refuses_a_huge_member_and_too_many_bytes_in_all():
    big = bytes(range(256)) * 4096  # 1 MiB that does not compress away
    message = refused("t.zip", make_zip([("t/data.bin", big)]), limits(max_member_bytes=512 * 1024))
    assert message == "t.zip: t/data.bin: larger than the 512.0 KiB per-file limit"
    three = make_tar([tar_member(f"t/{n}.bin", big) for n in range(3)])
    message = refused("t.tar.gz", three, limits(max_bytes=2 * 1024 * 1024 + 100, max_ratio=1e6))
    assert message.endswith("t/2.bin: the files exceed the 2.0 MiB size limit")


def test_a_zip_member_larger_than_it_declares_is_refused():
    # The declared size is patched down to 100 bytes: reading never trusts it to accept the member.
    data = make_zip([("t/a.txt", b"a" * 100_000)]).getvalue()
    declared = (100_000).to_bytes(4, "little")
    assert data.count(declared) == 2  # local header and central directory
    message = refused("t.zip", io.BytesIO(data.replace(declared, (100).to_bytes(4, "little"))))
    assert message.startswith("t.zip: t/a.txt: corrupt or unsupported member")


def test_refuses_too_many_members():
    many = [(f"t/{n}.py", b"") for n in range(11)]
    assert refused("t.zip", make_zip(many), limits(max_files=10)) == (
        "t.zip: 11 members, over the 10 file-count limit"
    )
    tar = make_tar([tar_member(name, data) for name, data in many])
    assert refused("t.tgz", tar, limits(max_files=10)) == "t.tgz: more than 10 members (the file-count limit)"


def test_refuses_an_archive_over_the_size_limit_before_reading_it():
    class Unseekable(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self.inner = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            chunk = self.inner.read(len(buffer))
            buffer[: len(chunk)] = chunk
            return len(chunk)

    data = make_zip([("t/a.py", os.urandom(4096))]).getvalue()
    for stream in (io.BytesIO(data), Unseekable(data)):
        assert (
            refused("t.zip", stream, limits(max_bytes=1000))
            == "t.zip: the archive is larger than the 1000 bytes size limit"
        )


# --- archives: content ----------------------------------------------------------------------------------


def test_rejects_a_code_file_that_is_not_utf8_naming_the_byte():
    message = refused("t.zip", make_zip([("t/model.py", "x = 'é'\n".encode("latin-1"))]))
    assert message == "t.zip: t/model.py: not UTF-8 at byte 5"
    assert refused("t.tar.gz", make_tar([tar_member("paper.tex", b"ok\n\xff")])) == (
        "t.tar.gz: paper.tex: not UTF-8 at byte 3"
    )


def test_the_kind_is_read_from_the_content_and_must_agree_with_the_name():
    tar = make_tar([tar_member("a.py", b"x")]).getvalue()
    assert (
        refused("t.zip", io.BytesIO(tar)) == "t.zip: the name says zip, but the content is a tar.gz archive"
    )
    assert refused("t.tar.gz", io.BytesIO(b"def f(): pass\n" * 40)).endswith(
        "the content is not an archive this portal reads"
    )
    assert refused("t.rar", io.BytesIO(tar)) == "t.rar: not a .zip, .tar.gz, .tgz or .tar file"
    cut = make_tar([tar_member("a.bin", os.urandom(4096))]).getvalue()[:2000]
    assert refused("t.tar.gz", io.BytesIO(cut)).startswith("t.tar.gz: not a readable tar archive (")


def test_a_single_top_folder_is_stripped_once():
    nested = make_zip([("outer/inner/a.py", b"1"), ("outer/inner/b/c.md", b"2")])
    result = intake_archive(filename="n.zip", stream=nested, limits=LIMITS)
    assert result.files == {"inner/a.py": b"1", "inner/b/c.md": b"2"}
    flat = intake_archive(
        filename="f.zip", stream=make_zip([("a/x.py", b"1"), ("b/y.py", b"2")]), limits=LIMITS
    )
    assert sorted(flat.files) == ["a/x.py", "b/y.py"]


def test_litter_is_dropped_and_listed():
    entries = [
        ("task/a.py", b"1"),
        ("task/__pycache__/a.cpython-311.pyc", b"\x00\xff"),
        ("__MACOSX/task/._a.py", b"\x00\x05\x16\x07"),
        ("task/.DS_Store", b"\x00\x00\x00\x01Bud1"),
    ]
    result = intake_archive(filename="t.zip", stream=make_zip(entries), limits=LIMITS)
    assert result.files == {"a.py": b"1"}  # the top folder is stripped once litter is gone
    assert sorted(result.skipped) == sorted(name for name, _ in entries[1:])


def test_a_tar_gz_of_an_example_task_reads_back_byte_identical(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(
            EXAMPLES / "rmsnorm", arcname="rmsnorm", filter=lambda i: None if "__pycache__" in i.name else i
        )
    buffer.seek(0)
    result = intake_archive(filename="rmsnorm.tar.gz", stream=buffer, limits=LIMITS)
    assert (result.source, result.origin, result.commit) == ("archive", "rmsnorm.tar.gz", None)
    assert result.files == all_files(EXAMPLES / "rmsnorm")
    intake_write(files=result.files, dest=tmp_path / "out")
    assert all_files(tmp_path / "out") == all_files(EXAMPLES / "rmsnorm")


def test_binary_data_files_are_accepted_within_the_limits():
    data = bytes(range(256))
    result = intake_archive(
        filename="t.zip", stream=make_zip([("x.npy", data), ("a.py", b"")]), limits=LIMITS
    )
    assert result.files["x.npy"] == data


def test_intake_write_never_writes_outside_its_folder(tmp_path):
    with pytest.raises(IntakeError, match=r"path leaves the folder"):
        intake_write(files={"../escape.py": b"x"}, dest=tmp_path / "out")
    (tmp_path / "out").mkdir(exist_ok=True)
    os.symlink(tmp_path, tmp_path / "out" / "link")
    with pytest.raises(FileExistsError):
        intake_write(files={"link": b"x"}, dest=tmp_path / "out")
    assert not (tmp_path / "escape.py").exists()


# --- git ------------------------------------------------------------------------------------------------


def commit_all(repo: git.Repo, message: str) -> str:
    repo.git.add("--all")
    return repo.index.commit(message, author=AUTHOR, committer=AUTHOR).hexsha


@pytest.fixture
def source_repo(tmp_path) -> tuple[Path, git.Repo]:
    path = tmp_path / "source"
    repo = git.Repo.init(path)
    return path, repo


def git_refused(url: str, commit: str, quarantine: Path, lim: IntakeLimits = LIMITS) -> IntakeError:
    with pytest.raises(IntakeError) as caught:
        intake_git(url=url, commit=commit, limits=lim, quarantine=quarantine)
    return caught.value


def test_fetches_a_commit_that_is_not_the_tip_and_only_that_commit(source_repo, tmp_path):
    path, repo = source_repo
    (path / "model.py").write_text("x = 1\n")
    first = commit_all(repo, "first")
    # The tip adds 4 MiB that does not compress: fetching it too would pass the 1 MiB limit below.
    (path / "weights.bin").write_bytes(os.urandom(4 * 1024 * 1024))
    (path / "model.py").write_text("x = 2\n")
    commit_all(repo, "second")
    quarantine = tmp_path / "quarantine"
    result = intake_git(
        url=f"file://{path}", commit=first, limits=limits(max_bytes=1024 * 1024), quarantine=quarantine
    )
    assert result.files == {"model.py": b"x = 1\n"}
    assert (result.source, result.origin, result.commit) == ("git", f"file://{path}", first)
    assert list(quarantine.iterdir()) == []  # the fetch folder is removed afterwards
    error = git_refused(f"file://{path}", repo.head.commit.hexsha, quarantine, limits(max_bytes=1024 * 1024))
    assert error.field == "url" and "size limit" in str(error)
    assert list(quarantine.iterdir()) == []


def test_reads_a_tree_without_stripping_and_applies_the_archive_checks(source_repo, tmp_path):
    path, repo = source_repo
    (path / "task").mkdir()
    (path / "task" / "model.py").write_bytes(b"x = '\xe9'\n")
    sha = commit_all(repo, "latin-1")
    error = git_refused(f"file://{path}", sha, tmp_path / "q")
    assert error.field == "commit"
    assert str(error) == f"file://{path}: task/model.py: not UTF-8 at byte 5"


def test_an_abbreviated_commit_is_accepted_for_a_branch_tip_only(source_repo, tmp_path):
    path, repo = source_repo
    (path / "a.py").write_text("1\n")
    first = commit_all(repo, "one")
    (path / "a.py").write_text("2\n")
    tip = commit_all(repo, "two")
    result = intake_git(
        url=f"file://{path}", commit=tip[:10].upper(), limits=LIMITS, quarantine=tmp_path / "q"
    )
    assert result.commit == tip and result.files == {"a.py": b"2\n"}
    error = git_refused(f"file://{path}", first[:10], tmp_path / "q")
    assert error.field == "commit"
    assert (
        str(error)
        == f"commit {first[:10]}: names no branch or tag tip of file://{path}; give the full 40-digit commit"
    )


def test_a_missing_commit_is_refused_on_the_commit_field(source_repo, tmp_path):
    path, repo = source_repo
    (path / "a.py").write_text("1\n")
    commit_all(repo, "one")
    error = git_refused(f"file://{path}", "0123456789" * 4, tmp_path / "q")
    assert error.field == "commit"
    assert str(error) == f"commit {'0123456789' * 4}: not found in file://{path}"
    assert list((tmp_path / "q").iterdir()) == []


def test_a_repository_with_a_symlink_is_refused(source_repo, tmp_path):
    path, repo = source_repo
    (path / "a.py").write_text("1\n")
    os.symlink("/etc/passwd", path / "passwd.py")
    sha = commit_all(repo, "link")
    assert repo.commit(sha).tree["passwd.py"].mode == 0o120000  # really a symlink in the commit
    error = git_refused(f"file://{path}", sha, tmp_path / "q")
    assert str(error).startswith(f"file://{path}: passwd.py: symbolic link")


def test_a_repository_with_a_submodule_is_refused(source_repo, tmp_path):
    path, repo = source_repo
    (path / "a.py").write_text("1\n")
    sha = commit_all(repo, "one")
    repo.git.update_index("--add", "--cacheinfo", f"160000,{sha},vendor")
    sha = repo.index.commit("gitlink", author=AUTHOR, committer=AUTHOR).hexsha
    error = git_refused(f"file://{path}", sha, tmp_path / "q")
    assert str(error).startswith(f"file://{path}: vendor: git submodule")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ext::sh -c touch% /tmp/rcb-pwned", "spaces or control characters"),
        ("ext::sh", "transport helpers"),
        ("fd::3", "transport helpers"),
        ("--upload-pack=touch /tmp/rcb-pwned", "spaces or control characters"),
        ("-uevil", "command-line option"),
        ("http://example.com/repo.git", "only https:// or file:// URLs"),
        ("git://example.com/repo.git", "only https:// or file:// URLs"),
        ("ssh://git@example.com/repo.git", "only https:// or file:// URLs"),
        ("git@github.com:org/repo.git", "only https:// or file:// URLs"),
        ("https://user:token@github.com/org/repo.git", "credentials"),
        ("https://127.0.0.1/repo.git", outbound.UNREACHABLE),
        ("https://[::1]/repo.git", outbound.UNREACHABLE),
        ("https://2130706433/repo.git", outbound.UNREACHABLE),
        ("https://localhost/repo.git", outbound.UNREACHABLE),
        ("file://host/tmp/repo", "absolute path"),
    ],
)
def test_refuses_other_transports_and_option_like_urls_on_the_url_field(url, why, tmp_path):
    error = git_refused(url, "a" * 40, tmp_path / "q")
    assert error.field == "url" and why in str(error)
    assert not (tmp_path / "q").exists()  # refused before any git process or folder
    assert not Path("/tmp/rcb-pwned").exists()


#: Every form of a local, private or special-purpose address seen used against URL checks.
REFUSED_HOSTS = (
    "127.0.0.1", "127.1.2.3", "0.0.0.0", "10.0.0.1", "172.16.5.4", "192.168.1.1", "100.64.0.1",
    "169.254.169.254", "192.0.0.9", "192.0.0.170", "192.0.2.1", "198.18.0.1", "198.51.100.7", "203.0.113.9",
    "224.0.0.1", "240.0.0.1", "255.255.255.255", "[::1]", "[::]", "[::127.0.0.1]", "[::ffff:127.0.0.1]",
    "[::ffff:10.0.0.1]", "[64:ff9b::7f00:1]", "[64:ff9b:1::a00:1]", "[2002:7f00:1::]", "[2001::1]",
    "[2001:db8::1]", "[fc00::1]", "[fd12:3456::1]", "[fe80::1]", "[fec0::1]", "[ff02::1]", "[100::1]",
    "localhost", "localhost.", "LOCALHOST", "api.localhost", "%6c%6fcalhost", "2130706433", "0x7f.1",
    "0177.0.0.1", "017700000001", "0x7f000001",
)  # fmt: skip


@pytest.mark.parametrize("host", REFUSED_HOSTS)
def test_every_local_or_special_address_form_is_refused_with_one_message(host, tmp_path):
    error = git_refused(f"https://{host}/repo.git", "a" * 40, tmp_path / "q")
    assert error.field == "url" and str(error).endswith(outbound.UNREACHABLE)
    assert not (tmp_path / "q").exists()


def test_a_name_that_resolves_to_a_local_address_is_refused_after_one_lookup(monkeypatch, tmp_path):
    import socket

    asked = []

    def resolve(host, port, *args, **kwargs):
        asked.append(host)
        # A rebinding server: one public answer, one loopback.
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    error = git_refused("https://git.example.org/repo.git", "a" * 40, tmp_path / "q")
    assert str(error) == f"https://git.example.org/repo.git: {outbound.UNREACHABLE}"
    assert asked == ["git.example.org"]


def test_git_connects_to_exactly_the_address_that_was_checked(monkeypatch):
    import socket

    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, port, *a, **k: [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("2606:4700::1111", port, 0, 0))
        ],
    )
    destination = outbound.resolve_public("git.example.org", 443)
    assert destination.curl_resolve() == "git.example.org:443:[2606:4700::1111]"
    run = intake._GitRun(
        folder=Path("/tmp"),
        url="https://git.example.org/r.git",
        limits=limits(),
        deadline=0,
        destination=destination,
    )
    assert "http.curloptResolve=git.example.org:443:[2606:4700::1111]" in run.config


def test_a_host_that_does_not_answer_gets_the_same_message_as_a_refused_one():
    for stderr in (
        "fatal: unable to access 'https://x/': Failed to connect to x port 443: Connection refused",
        "fatal: unable to access 'https://x/': GnuTLS recv error (-110): The TLS connection was non-properly terminated.",
        "fatal: unable to access 'https://x/': Could not resolve host: x",
    ):
        assert (
            str(intake._git_failure("https://x/", "a" * 40, stderr)) == f"https://x/: {outbound.UNREACHABLE}"
        )


def test_file_urls_are_refused_unless_the_setting_allows_them(source_repo, tmp_path):
    path, repo = source_repo
    (path / "a.py").write_text("1\n")
    sha = commit_all(repo, "one")
    error = git_refused(f"file://{path}", sha, tmp_path / "q", limits(allow_file_urls=False))
    assert str(error) == f"file://{path}: only https:// URLs are accepted"


@pytest.mark.parametrize("commit", ["HEAD", "main", "--upload-pack=x", "abc12", "g" * 40, "a" * 41, ""])
def test_refuses_commits_that_are_not_7_to_40_hex_digits(commit, tmp_path):
    error = git_refused("https://github.com/org/repo.git", commit, tmp_path / "q")
    assert error.field == "commit" and "a commit is 7 to 40 hexadecimal digits" in str(error)


def test_a_git_intake_past_its_time_limit_is_stopped(source_repo, tmp_path):
    path, repo = source_repo
    (path / "a.py").write_text("1\n")
    sha = commit_all(repo, "one")
    error = git_refused(f"file://{path}", sha, tmp_path / "q", limits(git_timeout_s=0.001))
    assert error.field == "url" and "time limit" in str(error)
    assert list((tmp_path / "q").iterdir()) == []


# --- settings and the quarantine ------------------------------------------------------------------------


def test_limits_come_from_the_settings(settings):
    settings.RCB_INTAKE_MAX_BYTES = 123
    settings.RCB_INTAKE_MAX_FILES = 4
    settings.RCB_INTAKE_MAX_MEMBER_BYTES = 56
    settings.RCB_INTAKE_MAX_RATIO = 7.5
    settings.RCB_INTAKE_GIT_TIMEOUT_S = 9.0
    settings.RCB_INTAKE_ALLOW_FILE_URLS = True
    assert IntakeLimits.from_settings() == IntakeLimits(
        max_bytes=123,
        max_files=4,
        max_member_bytes=56,
        max_ratio=7.5,
        git_timeout_s=9.0,
        allow_file_urls=True,
    )


def test_the_quarantine_is_under_the_var_folder_and_each_folder_is_removed(settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"
    root = quarantine_root()
    assert root == tmp_path / "var" / "quarantine" and root.is_dir()
    with pytest.raises(RuntimeError), quarantine_folder(root=root) as folder:
        (folder / "x").write_text("x")
        raise RuntimeError("fails half-way")
    assert list(root.iterdir()) == []
