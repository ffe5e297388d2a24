"""The Chalice app: blueprints, the envelope middleware and the scheduled functions. Wiring only."""

from chalice import Chalice, Cron, Rate

from chalicelib.api.blueprints import all_blueprints
from chalicelib.api.routing import envelope_middleware
from chalicelib.jobs import comment_purge, mail_poll
from chalicelib.jobs.base import Deadline

app = Chalice(app_name="agora")
app.register_middleware(envelope_middleware, "http")
for blueprint in all_blueprints():
    app.register_blueprint(blueprint)


@app.schedule(Rate(5, unit=Rate.MINUTES), name="poll-mail")
def poll_mail(event):
    return mail_poll.poll_all_in_process(Deadline.from_lambda(event.context)).lines


@app.schedule(Cron(0, 3, 1, "*", "?", "*"), name="purge-comments")
def purge_comments(event):
    return comment_purge.purge_old_deleted_comments(Deadline.from_lambda(event.context))
