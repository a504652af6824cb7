// A load driver for bench/java_peer.py: RocketMQ 4.9.3's own Java client (DefaultMQProducer) sending
// synchronously in a loop, the same program against our broker and against 4.9.3's. Compiled at bench time
// against a build made by scripts/java-peers/build.sh; nothing here ships with rocketstore.
//
//   BenchSendLoop NAMESRV     then, one command a line on stdin, one JSON line back on stdout:
//   send TOPIC N BODY_BYTES THREADS   N sends split over THREADS threads, each producer.send() awaited;
//                                     answers {"rate": sends per second} timed around the loop only
//   drain TOPIC N GROUP               a push consumer of the new GROUP (from the first offset) takes N messages;
//                                     answers {"rate": messages per second} from the first message to the Nth
//   quit
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

public class BenchSendLoop {
    public static void main(String[] args) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("bench-java-producer");
        producer.setNamesrvAddr(args[0]);
        producer.setInstanceName("bench-java-" + ProcessHandle.current().pid());
        // the broker's port - 2 (4.9.3's VIP channel) is not ours to assume: both brokers on their main port
        producer.setVipChannelEnabled(false);
        // a loaded machine (other processes on its cores) stalls some sends for seconds: wait, do not fail
        producer.setSendMsgTimeout(30_000);
        producer.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        System.out.println("{\"ready\": true}");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            if (w[0].equals("quit")) {
                break;
            }
            try {
                double rate = w[0].equals("drain")
                    ? drain(args[0], w[1], Integer.parseInt(w[2]), w[3])
                    : send(producer, w[1], Integer.parseInt(w[2]), Integer.parseInt(w[3]), Integer.parseInt(w[4]));
                System.out.println("{\"rate\": " + rate + "}");
            } catch (Throwable t) {
                System.out.println("{\"error\": \"" + String.valueOf(t).replace("\\", "/").replace("\"", "'")
                                   .replace("\n", " ") + "\"}");
            }
            System.out.flush();
        }
        producer.shutdown();
        System.exit(0);
    }

    static double send(final DefaultMQProducer producer, final String topic, int n, final int bodyBytes,
                       int threads) throws Exception {
        final byte[] body = new byte[bodyBytes];
        for (int i = 0; i < bodyBytes; i++) {
            body[i] = (byte) ((i * 7 + 3) % 251);
        }
        final int per = Math.max(1, n / threads);
        final AtomicReference<Throwable> failed = new AtomicReference<>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            workers.add(new Thread(() -> {
                try {
                    for (int i = 0; i < per && failed.get() == null; i++) {
                        SendResult r = producer.send(new Message(topic, "TagA", body));
                        if (r.getSendStatus() != SendStatus.SEND_OK) {
                            throw new IllegalStateException("send: " + r.getSendStatus());
                        }
                    }
                } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                }
            }));
        }
        long t0 = System.nanoTime();
        for (Thread w : workers) {
            w.start();
        }
        for (Thread w : workers) {
            w.join();
        }
        long elapsed = System.nanoTime() - t0;
        if (failed.get() != null) {
            throw new RuntimeException(failed.get());
        }
        return per * threads / (elapsed / 1e9);
    }

    static double drain(String namesrv, String topic, int n, String group) throws Exception {
        final CountDownLatch left = new CountDownLatch(n);
        final AtomicLong first = new AtomicLong();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("bench-java-" + ProcessHandle.current().pid() + "-" + group);
        consumer.setVipChannelEnabled(false);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            first.compareAndSet(0, System.nanoTime());
            for (int i = 0; i < msgs.size(); i++) {
                left.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        try {
            if (!left.await(120 + n / 500, TimeUnit.SECONDS)) {
                throw new IllegalStateException("drained " + (n - left.getCount()) + " of " + n);
            }
            long elapsed = System.nanoTime() - first.get();
            return n / (elapsed / 1e9);
        } finally {
            consumer.shutdown();
        }
    }
}
