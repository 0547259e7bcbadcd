package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"plimsoll.dev/plimsoll/notify"
)

// notifyOptions are the notification flags of run and sync --once.
type notifyOptions struct {
	webhookFiles, slackFiles []string
	timeout                  time.Duration
}

func (o *notifyOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.webhookFiles, "notify-webhook-file", nil, "file holding the URL of a webhook to POST rollout and sync notifications to as JSON; repeatable")
	fs.StringArrayVar(&o.slackFiles, "notify-slack-file", nil, "file holding a Slack-compatible incoming webhook URL to post rollout and sync notifications to; repeatable")
	fs.DurationVar(&o.timeout, "notify-timeout", notify.DefaultTimeout, "timeout of one attempt to deliver a notification")
}

// dispatcher reads the receivers the flags name and starts their
// senders; nil without any. A receiver is named in logs and metrics
// after its file ("slack/team-a"), never by its URL.
func (o *notifyOptions) dispatcher(log *slog.Logger, reg prometheus.Registerer) (*notify.Dispatcher, error) {
	if o.timeout <= 0 {
		return nil, fmt.Errorf("--notify-timeout %s: want a positive duration", o.timeout)
	}
	var receivers []notify.Receiver
	for _, set := range []struct {
		flag   string
		format notify.Format
		files  []string
	}{{"--notify-webhook-file", notify.FormatWebhook, o.webhookFiles}, {"--notify-slack-file", notify.FormatSlack, o.slackFiles}} {
		for _, file := range set.files {
			r, err := notify.ReadReceiver(set.format, file)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", set.flag, err)
			}
			receivers = append(receivers, r)
		}
	}
	if len(receivers) == 0 {
		return nil, nil
	}
	if err := notify.CheckNames(receivers); err != nil {
		return nil, err
	}
	var metrics *notify.Metrics
	if reg != nil {
		metrics = notify.NewMetrics(reg)
	}
	names := make([]string, len(receivers))
	for i, r := range receivers {
		names[i] = r.Name
	}
	log.Info("notifying", "receivers", names)
	return notify.New(notify.Config{Receivers: receivers, Log: log, Metrics: metrics, Timeout: o.timeout,
		UserAgent: "plimsoll/" + version}), nil
}

// stopNotifying gives the notifications still queued notify.DefaultDrain
// to go out, then drops the rest.
func stopNotifying(d *notify.Dispatcher) {
	ctx, cancel := context.WithTimeout(context.Background(), notify.DefaultDrain)
	defer cancel()
	d.Shutdown(ctx)
}
