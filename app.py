"""The Chalice app: blueprints, the envelope middleware and the scheduled functions. Wiring only."""

from chalice import Chalice, Cron, Rate

from chalicelib.api.blueprints import all_blueprints
from chalicelib.api.cors import add_preflight_routes
from chalicelib.api.routing import envelope_middleware
from chalicelib.jobs import (
    comment_purge,
    digests,
    mail_poll,
    mail_push,
    migrate,
    notify,
    outbox,
    ses_feedback,
)
from chalicelib.jobs.base import Deadline, each_message, heartbeat, require_token_secret
from chalicelib.logs import invocation, lambda_handler
from chalicelib.settings import get_settings

app = Chalice(app_name="agora")
app.register_middleware(envelope_middleware, "http")
for blueprint in all_blueprints():
    app.register_blueprint(blueprint)
add_preflight_routes(app)


@app.schedule(Rate(5, unit=Rate.MINUTES), name="dispatch-mail-polls")
@lambda_handler
@heartbeat("dispatch-mail-polls")
def dispatch_mail_polls(event):
    return mail_poll.dispatch()


# Each message names several mailboxes, polled side by side (jobs/mail_poll.py).
@app.on_sqs_message(queue=get_settings().mailbox_queue, batch_size=1, name="poll-mailbox")
@lambda_handler
def poll_mailbox(event):
    deadline = Deadline.from_lambda(event.context)
    return each_message(event, lambda body: mail_poll.poll_from_queue(body, deadline))


@app.schedule(Cron(0, 3, 1, "*", "?", "*"), name="purge-comments")
@lambda_handler
@heartbeat("purge-comments")
def purge_comments(event):
    return comment_purge.purge_old_deleted_comments(Deadline.from_lambda(event.context))


@app.schedule(Cron(0, 6, "*", "*", "?", "*"), name="send-digests")
@lambda_handler
@heartbeat("send-digests")
def send_digests(event):
    # The monthly purge's daily check rides on this daily run (infra/alarms.py alarms its metric).
    comment_purge.report_last_run()
    return digests.scheduled_daily_digests(Deadline.from_lambda(event.context))


@app.on_sqs_message(queue=get_settings().digest_queue, batch_size=1, name="deliver-digests")
@lambda_handler
def deliver_digests(event):
    require_token_secret()
    deadline = Deadline.from_lambda(event.context)
    return each_message(event, lambda body: digests.deliver_batch(body, deadline))


@app.on_sqs_message(queue=get_settings().notify_queue, batch_size=1, name="deliver-notifications")
@lambda_handler
def deliver_notifications(event):
    require_token_secret()
    deadline = Deadline.from_lambda(event.context)
    return each_message(event, lambda body: notify.deliver_from_queue([body], deadline=deadline))


@app.on_sqs_message(queue=get_settings().ses_feedback_queue, batch_size=10, name="ses-feedback")
@lambda_handler
def handle_ses_feedback(event):
    return ses_feedback.handle_sqs_event(event.to_dict(), event.context)


# Triggered by the outbox table's stream (infra/build.py: the event source mapping, its retries,
# dead-letter queue and partial batch responses); answers the batch's first failed record.
@app.lambda_function(name="drain-outbox")
def drain_outbox(event, context):
    with invocation(context):
        require_token_secret()  # its notifications carry unsubscribe links
        # Its "it ran" signal: alarmed when the outbox is written and the drain stays silent.
        return heartbeat("drain-outbox")(outbox.handle_stream_batch)(event)


# SES receiving for the inbound domain (CONTRACT §13, infra/inbound.py): the verdict, asked before
# a mail is stored (RequestResponse), and the mail's delivery once it is (asynchronous: retried,
# then its dead-letter queue).
@app.lambda_function(name="mail-verdict")
def mail_verdict(event, context):
    with invocation(context):
        return mail_push.verdict(event)


@app.lambda_function(name="receive-mail")
def receive_mail(event, context):
    with invocation(context):
        require_token_secret()  # the mail's notifications carry unsubscribe links
        return mail_push.handle_ses_event(event)


# Invoked by `make deploy` after each stack update, again until it answers done (infra/deploy.py):
# brings stored items to the shape this version writes, as much as fits in one invocation.
@app.lambda_function(name="migrate")
def migrate_items(event, context):
    with invocation(context):
        return migrate.handle_invocation(context)


# CodeDeploy's PreTraffic hook of a prod deploy (infra/rollout.py): the API's new version answers
# a health call, a read and, signed in as the deploy canary, its reads and a write it undoes,
# before any traffic moves to it.
@app.lambda_function(name="pre-traffic")
def pre_traffic(event, context):
    from chalicelib.jobs import pre_traffic

    with invocation(context):
        return pre_traffic.handle(event)
