'use strict';
// The Node RocketMQ client ali-ons (npm ali-ons 3.12.0) sending straight to a group's retry topic, as its
// consumer does when CONSUMER_SEND_MSG_BACK fails (MQPushConsumer.sendMessageBack): the message goes to
// %RETRY%<group> with RECONSUME_TIME and MAX_RECONSUME_TIMES, which the producer moves into the send
// header (reconsumeTimes "j", maxReconsumeTimes "l"), and a DELAY level.
//
//   node ons_hunt14_runner.js send-retry NAMESRV GROUP RECONSUME_TIMES MAX_RECONSUME_TIMES DELAY_LEVEL BODY
//       one {"status", "msg_id", "queue_id", "queue_offset"} line, or {"error", "code"} and exit status 1
//
// and a plain send whose DELAY property is the text given (what msg.delayTimeLevel = x makes of x + ''):
//
//   node ons_hunt14_runner.js send-delay NAMESRV TOPIC DELAY_TEXT BODY
//       the same one line
const httpclient = require('urllib');
const { Producer, Message } = require('ali-ons');

const emit = obj => process.stdout.write(JSON.stringify(obj) + '\n');

async function sendRetry(nameSrv, group, reconsumeTimes, maxReconsumeTimes, delayLevel, body) {
  const producer = new Producer({ httpclient, nameSrv, producerGroup: 'hunt14-retry-producer',
    accessKeyId: 'no-access-key', accessKeySecret: 'no-secret-key' });
  await producer.ready();
  const msg = new Message(`%RETRY%${group}`, '', body);
  msg.properties.RECONSUME_TIME = reconsumeTimes;
  msg.properties.MAX_RECONSUME_TIMES = maxReconsumeTimes;
  msg.retryTopic = 'OnsOriginTopic';
  msg.delayTimeLevel = Number(delayLevel);
  try {
    const r = await producer.send(msg);
    emit({ status: r.sendStatus, msg_id: r.msgId, queue_id: Number(r.messageQueue.queueId),
      queue_offset: Number(r.queueOffset) });
  } finally {
    await producer.close();
  }
}

async function sendDelay(nameSrv, topic, delayText, body) {
  const producer = new Producer({ httpclient, nameSrv, producerGroup: 'hunt14-delay-producer',
    accessKeyId: 'no-access-key', accessKeySecret: 'no-secret-key' });
  await producer.ready();
  const msg = new Message(topic, 'TagD', body);
  msg.delayTimeLevel = delayText;
  try {
    const r = await producer.send(msg);
    emit({ status: r.sendStatus, msg_id: r.msgId, queue_id: Number(r.messageQueue.queueId),
      queue_offset: Number(r.queueOffset) });
  } finally {
    await producer.close();
  }
}

(async () => {
  const [ command, ...rest ] = process.argv.slice(2);
  if (command === 'send-retry') await sendRetry(...rest);
  else if (command === 'send-delay') await sendDelay(...rest);
  else throw new Error(`unknown command ${command}`);
  process.exit(0);
})().catch(err => {
  emit({ error: `${err.name}: ${err.message}`, code: err.code });
  process.exit(1);
});
