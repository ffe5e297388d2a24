"""Mail in (CONTRACT §9), one pipeline: a mailbox's mail becomes posts or comments, exactly once.

The mail jobs call its one entry, `MailIngestor.poll` (ingest.py), which orders the steps; what a
mail becomes is decided and stored in planner.py, by the pure rules of rules.py; the words of a
rejected mail's notice are rejections.py, sent by notices.py. Reply keys and thread ids, which the
notifications write, are read from chalicelib/mail/threads.py: nothing here imports services/notify.
Only the mail jobs import this package (chalicelib/deps.py builds the ingestor on first use), so
the API's cold start never loads it.
"""

from chalicelib.services.mail_in.ingest import MailIngestor

__all__ = ["MailIngestor"]
