"""`cli deliver` and `cli sent-mail` (chalicelib/cli_mail.py) on their own: a maildir as make run
names it, and the embedded AWS's /moto-api/data.json as a small HTTP server answers it. The
whole path against `make run` and its Dovecot is tests/local/test_local.py."""

from __future__ import annotations

import base64
import json
import threading
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chalicelib import cli_mail
from chalicelib.cli import main
from chalicelib.settings import reload_settings

GROUP = "076e75e0-7661-51c5-9ccc-8a2b790e771e"


def make_run_folder(tmp_path):
    """A data folder as make run leaves it: mailboxes.json naming two maildirs."""
    entries = []
    for name, label, slug in ((GROUP, "Gardening Club", "gardening"), ("comments", "c", "")):
        maildir = tmp_path / "mail" / name / "Maildir"
        for part in ("new", "cur", "tmp"):
            (maildir / part).mkdir(parents=True)
        entries.append({"name": name, "label": label, "slug": slug, "maildir": str(maildir)})
    (tmp_path / "mailboxes.json").write_text(json.dumps({"mailboxes": entries}))
    return tmp_path


@pytest.mark.fast
def test_deliver_writes_the_mail_into_new_with_crlf_line_ends_readable_by_its_owner(tmp_path):
    folder = make_run_folder(tmp_path)
    mail = tmp_path / "hello.eml"
    mail.write_bytes(b"From: ann@agora.example\nSubject: Hello\n\nFirst line\nSecond\n")
    line = cli_mail.deliver(GROUP, str(mail), folder)
    assert "Gardening Club" in line and "Hello" in line
    # The hint names what reads it now: `poll-mail --due` answers "no mailbox is due" right after
    # a poll, since the mailbox is due minutes later.
    assert "or `cli poll-mail`, reads it at once" in line
    assert "`cli poll-mail --due`" not in line
    (stored,) = (folder / "mail" / GROUP / "Maildir" / "new").iterdir()
    assert stored.read_bytes() == (
        b"From: ann@agora.example\r\nSubject: Hello\r\n\r\nFirst line\r\nSecond\r\n"
    )
    assert stored.stat().st_mode & 0o777 == 0o600
    assert list((folder / "mail" / GROUP / "Maildir" / "tmp").iterdir()) == []
    # The slug names the same mailbox; `comments` the email-to-comment one.
    cli_mail.deliver("gardening", str(mail), folder)
    cli_mail.deliver("comments", str(mail), folder)
    assert len(list((folder / "mail" / GROUP / "Maildir" / "new").iterdir())) == 2
    assert len(list((folder / "mail" / "comments" / "Maildir" / "new").iterdir())) == 1


@pytest.mark.fast
@pytest.mark.parametrize(
    ("mailbox", "content", "said"),
    [
        ("nowhere", b"Subject: x\n\nbody\n", "no local mailbox 'nowhere'; make run serves:"),
        ("", b"Subject: x\n\nbody\n", "no local mailbox ''"),
        (GROUP, b"", "is empty"),
        (GROUP, b" \r\n\n", "is empty"),
        (GROUP, None, "No such file"),
    ],
)
def test_deliver_refuses_what_it_cannot_deliver_in_one_line(tmp_path, mailbox, content, said):
    folder = make_run_folder(tmp_path)
    mail = tmp_path / "mail.eml"
    if content is not None:
        mail.write_bytes(content)
    with pytest.raises(cli_mail.MailCommandError, match=said.replace("(", r"\(")):
        cli_mail.deliver(mailbox, str(mail), folder)
    assert list((folder / "mail" / GROUP / "Maildir" / "new").iterdir()) == []


@pytest.mark.fast
def test_deliver_without_make_runs_mailboxes_says_how_to_get_them(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AGORA_DATA_DIR", str(tmp_path / "none"))
    reload_settings()
    mail = tmp_path / "m.eml"
    mail.write_bytes(b"Subject: x\n\nbody\n")
    assert main(["deliver", GROUP, str(mail)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "mailboxes.json is missing" in err and "dovecot-pop3d" in err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "mailboxes.json").write_text("{not json")
    monkeypatch.setenv("AGORA_DATA_DIR", str(tmp_path / "bad"))
    reload_settings()
    assert main(["deliver", GROUP, str(mail)]) == 1
    assert "cannot be read" in capsys.readouterr().err


@pytest.mark.fast
def test_a_file_larger_than_any_mail_is_refused(tmp_path, monkeypatch):
    folder = make_run_folder(tmp_path)
    monkeypatch.setattr(cli_mail, "MAX_MAIL_BYTES", 100)
    mail = tmp_path / "big.eml"
    mail.write_bytes(b"Subject: x\n\n" + b"a" * 200)
    with pytest.raises(cli_mail.MailCommandError, match="is over"):
        cli_mail.deliver(GROUP, str(mail), folder)


@pytest.mark.fast
@given(st.binary(max_size=300))
def test_crlf_leaves_no_bare_line_end_and_ends_with_one(raw):
    stored = cli_mail.crlf(raw)
    assert b"\r" not in stored.replace(b"\r\n", b"")
    assert b"\n" not in stored.replace(b"\r\n", b"")
    assert stored == b"" or stored.endswith(b"\r\n")
    assert cli_mail.crlf(stored) == stored


def notification(to: str, subject: str, why: str) -> str:
    message = EmailMessage()
    message["From"] = "Gardening Club <noreply@localhost>"
    message["To"] = to
    message["Subject"] = subject
    message.set_content(
        f"Gus wrote in Gardening Club\n\n-- \nYou receive this email because of your "
        f"subscription: {why}.\nUnsubscribe from these emails.\n",
        cte="quoted-printable",
    )
    return message.as_string()


@pytest.mark.fast
def test_sent_mail_lists_newest_first_with_recipients_subject_and_reason():
    records = [
        {
            "id": "m1",
            "destinations": ["Ann <ann@agora.example>"],
            "sent_on": "2026-11-28T10:00:00+00:00",
            "raw_data": notification(
                "ann@agora.example", "Compost", "All new group posts in Gardening Club"
            ),
        },
        {
            "id": "m2",
            "destinations": ["gus@agora.example"],
            "raw_data": notification("gus@agora.example", "Re: Compost", "the daily digest"),
        },
    ]
    mails = cli_mail.sent_mail(records)
    assert [m.id for m in mails] == ["m2", "m1"]
    lines = cli_mail.show_sent_mail(mails, None, 20, None)
    assert lines[0].startswith("m2  ")
    assert lines[3] == "m1  2026-11-28 10:00:00 UTC  to Ann <ann@agora.example>"
    assert "    why: All new group posts in Gardening Club" in lines
    only_ann = cli_mail.show_sent_mail(mails, "ANN@agora", 20, None)
    assert only_ann[0].startswith("m1  ") and len(only_ann) == 3
    assert cli_mail.show_sent_mail(mails, None, 1, None)[0].startswith("m2  ")
    assert cli_mail.show_sent_mail(mails, "nobody@x", 20, None) == ["no mail sent to nobody@x yet"]
    raw = cli_mail.show_sent_mail(mails, None, 20, "m1")[0]
    assert "Subject: Compost" in raw
    with pytest.raises(cli_mail.MailCommandError, match="no sent mail has the id 'm9'"):
        cli_mail.show_sent_mail(mails, None, 20, "m9")


@pytest.mark.fast
@given(
    st.lists(
        st.fixed_dictionaries(
            {"id": st.text(max_size=5), "raw_data": st.text(max_size=200)},
            optional={
                "destinations": st.lists(st.text(max_size=20), max_size=3),
                "sent_on": st.text(max_size=30),
            },
        ),
        max_size=4,
    )
)
def test_whatever_the_embedded_ses_holds_is_listed_without_a_traceback(records):
    mails = cli_mail.sent_mail(records)
    assert len(mails) == len(records)
    lines = cli_mail.show_sent_mail(mails, None, 20, None)
    assert all("\n" not in line for line in lines)


class MotoApi(BaseHTTPRequestHandler):
    """/moto-api/data.json behind HTTP Basic, as make run's embedded AWS serves it."""

    pair = "key:secret"
    body = json.dumps({"ses": {"RawMessage": []}})

    def do_GET(self):  # noqa: N802 (http.server's name)
        expected = "Basic " + base64.b64encode(self.pair.encode()).decode()
        if self.path != "/moto-api/data.json" or self.headers.get("Authorization") != expected:
            self.send_response(401)
            self.end_headers()
            return
        payload = self.body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def moto_api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), MotoApi)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_sent_mail_reads_the_moto_api_with_make_runs_key_pair(moto_api, monkeypatch, capsys):
    MotoApi.body = json.dumps(
        {
            "ses": {
                "RawMessage": [
                    {
                        "id": "m1",
                        "destinations": ["ann@agora.example"],
                        "raw_data": notification("ann@agora.example", "Hi", "x"),
                    }
                ]
            },
            "dynamodb": {},
        }
    )
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_api)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    assert main(["sent-mail"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("m1  (date unknown)  to ann@agora.example\n    Hi\n")
    # Another key pair is refused by the server: the command says which variables to set.
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    assert main(["sent-mail"]) == 1
    assert "AWS_SECRET_ACCESS_KEY" in capsys.readouterr().err


def test_sent_mail_says_when_nothing_answers(monkeypatch, capsys):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    assert main(["sent-mail"]) == 1
    assert "is make run running?" in capsys.readouterr().err
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    assert main(["sent-mail", "--last", "0"]) == 2
