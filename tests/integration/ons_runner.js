'use strict';
// Drive the Node RocketMQ client ali-ons (npm ali-ons 3.12.0, pure JavaScript) against our name server and
// broker, talking JSON lines on stdout (as cpp_client_runner.py does for the C++ client):
//
//   node ons_runner.js produce NAMESRV TOPIC GROUP COUNT
//       one {"i", "status", "msg_id", "queue_id", "queue_offset"} line per send, then {"done": true}
//   node ons_runner.js consume NAMESRV TOPIC GROUP EXPRESSION COUNT [--retry-first]
//       one {"body", "tags", "keys", "msg_id", "queue_id", "queue_offset", "color", "reconsume_times", "retried"}
//       line per delivery, then {"done": true} once COUNT were delivered (a clustering consumer from the
//       first offset); with --retry-first the first delivery of each body answers ACTION_RETRY (the broker
//       redelivers it through the group's retry topic) and only later deliveries count
//
// ACL keys come from ONS_ACCESS_KEY / ONS_SECRET_KEY (ali-ons always signs; without them it signs with
// placeholders, which a broker without ACL ignores).  Message i has body "ons-i ünï", tag TagA or TagB
// (i even / odd), key "key-i" and the user property color=blue-i.  Any failure is an {"error"} line and
// exit status 1.
const httpclient = require('urllib');
const { Producer, Consumer, Message } = require('ali-ons');

const emit = obj => process.stdout.write(JSON.stringify(obj) + '\n');
const keys = {
  accessKeyId: process.env.ONS_ACCESS_KEY || 'no-access-key',
  accessKeySecret: process.env.ONS_SECRET_KEY || 'no-secret-key',
};

async function produce(nameSrv, topic, group, count) {
  const producer = new Producer({ httpclient, nameSrv, producerGroup: group, ...keys });
  await producer.ready();
  for (let i = 0; i < count; i++) {
    const msg = new Message(topic, i % 2 ? 'TagB' : 'TagA', `ons-${i} ünï`);
    msg.keys = [ `key-${i}` ];
    msg.properties.color = `blue-${i}`;
    const r = await producer.send(msg);
    emit({ i, status: r.sendStatus, msg_id: r.msgId, queue_id: Number(r.messageQueue.queueId),
      queue_offset: Number(r.queueOffset) });
  }
  await producer.close();
  emit({ done: true });
}

async function consume(nameSrv, topic, group, expression, count, retryFirst) {
  const consumer = new Consumer({ httpclient, nameSrv, consumerGroup: group,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET', ...keys });
  let got = 0;
  const retried = new Set();
  await new Promise((resolve, reject) => {
    consumer.on('error', reject);
    consumer.subscribe(topic, expression, async msg => {
      const body = msg.body.toString();
      const retry = retryFirst && !retried.has(body);
      emit({ body, tags: msg.tags, keys: msg.keys, msg_id: msg.msgId, queue_id: Number(msg.queueId),
        queue_offset: Number(msg.queueOffset), color: msg.properties.color,
        reconsume_times: Number(msg.reconsumeTimes), retried: retry });
      if (retry) {
        retried.add(body);
        return Consumer.ACTION_RETRY;
      }
      if (++got >= count) resolve();
    });
  });
  await consumer.close();
  emit({ done: true });
}

(async () => {
  const [ command, nameSrv, topic, group, ...rest ] = process.argv.slice(2);
  if (command === 'produce') await produce(nameSrv, topic, group, Number(rest[0]));
  else if (command === 'consume') await consume(nameSrv, topic, group, rest[0], Number(rest[1]), rest[2] === '--retry-first');
  else throw new Error(`unknown command ${command}`);
  process.exit(0);
})().catch(err => {
  emit({ error: `${err.name}: ${err.message}` });
  process.exit(1);
});
