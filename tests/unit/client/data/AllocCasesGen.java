import java.util.*;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.rebalance.*;
import org.apache.rocketmq.common.message.MessageQueue;

// Generates tests/unit/client/data/hunt15_alloc_java_cases.jsonl (see test_hunt15_alloc_java_cases.py).
// Not run by the tests.  Compile it against RocketMQ 4.9.3's client rebalance classes, common/consistenthash,
// common/message/MessageQueue and AllocateMessageQueueStrategy (javac on the rocketmq-all-4.9.3 sources, with
// commons-lang3 and two no-op stand-ins for ClientLogger/InternalLogger and commons-collections'
// CollectionUtils.isEmpty), then:  java -Dfile.encoding=UTF-8 AllocCasesGen COUNT SEED [u]
// One JSON line per random case: queues, client ids and, per strategy, each id's queue indices.
public class AllocCasesGen {
    static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
    static String ints(List<MessageQueue> res, List<MessageQueue> all) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < res.size(); i++) { if (i > 0) b.append(','); b.append(all.indexOf(res.get(i))); }
        return b.append(']').toString();
    }
    static String room(String s) { return s.split("@")[0]; }
    public static void main(String[] a) {
        int n = Integer.parseInt(a[0]);
        Random r = new Random(Long.parseLong(a[1]));
        boolean unicode = a.length > 2;
        String[] topics = {"TopicTest", "order_topic", "%RETRY%group_a", "t"};
        String[] rooms = {"IDC1", "IDC2", "IDC3"};
        for (int c = 0; c < n; c++) {
            String topic = unicode ? "t\u00e9\u4e2d" + r.nextInt(100) : topics[r.nextInt(topics.length)] + (r.nextBoolean() ? "" : String.valueOf(r.nextInt(1000)));
            int nb = 1 + r.nextInt(4);
            List<MessageQueue> mqAll = new ArrayList<>();
            Set<String> bnames = new HashSet<>();
            for (int b = 0; b < nb; b++) {
                String bn = (r.nextInt(3) > 0 ? rooms[r.nextInt(3)] + "@" : "") + "broker-" + (char) ('a' + r.nextInt(6));
                if (!bnames.add(bn)) continue;
                int nq = 1 + r.nextInt(r.nextBoolean() ? 4 : 16);
                for (int i = 0; i < nq; i++) mqAll.add(new MessageQueue(topic, bn, i));
            }
            Collections.sort(mqAll);
            int nc = 1 + r.nextInt(r.nextInt(4) == 0 ? 20 : 8);
            Set<String> cset = new HashSet<>();
            for (int i = 0; i < nc; i++) {
                String cid = unicode ? "\u00fc" + rooms[r.nextInt(3)] + "@\u0394" + r.nextInt(100000)
                    : rooms[r.nextInt(3)].toLowerCase().substring(0, 3) + rooms[r.nextInt(3)].substring(3) + "@10.0." + r.nextInt(256) + "." + r.nextInt(256) + "@" + r.nextInt(100000) + "#" + Math.abs(r.nextLong() % 100000000000L);
                cset.add(cid);
            }
            // consumer room: upper-cased text before the first '@' (idcN -> IDCN)
            List<String> cidAll = new ArrayList<>(cset);
            Collections.sort(cidAll);
            int vn = 1 + r.nextInt(50);
            Set<String> idcs = new HashSet<>();
            for (String rm : rooms) if (r.nextBoolean()) idcs.add(rm);
            AllocateMachineRoomNearby.MachineRoomResolver res = new AllocateMachineRoomNearby.MachineRoomResolver() {
                public String brokerDeployIn(MessageQueue mq) { return room(mq.getBrokerName()); }
                public String consumerDeployIn(String cid) { return room(cid).toUpperCase(Locale.ROOT); }
            };
            AllocateMessageQueueByMachineRoom byRoom = new AllocateMessageQueueByMachineRoom();
            byRoom.setConsumeridcs(idcs);
            LinkedHashMap<String, AllocateMessageQueueStrategy> st = new LinkedHashMap<>();
            st.put("averagely", new AllocateMessageQueueAveragely());
            st.put("circle", new AllocateMessageQueueAveragelyByCircle());
            st.put("hash", new AllocateMessageQueueConsistentHash());
            st.put("hash0", new AllocateMessageQueueConsistentHash(0));
            st.put("hash1", new AllocateMessageQueueConsistentHash(1));
            st.put("hashN", new AllocateMessageQueueConsistentHash(vn));
            st.put("room", byRoom);
            st.put("nearby_averagely", new AllocateMachineRoomNearby(new AllocateMessageQueueAveragely(), res));
            st.put("nearby_circle", new AllocateMachineRoomNearby(new AllocateMessageQueueAveragelyByCircle(), res));
            st.put("nearby_hash", new AllocateMachineRoomNearby(new AllocateMessageQueueConsistentHash(), res));
            StringBuilder o = new StringBuilder("{\"topic\":").append(q(topic)).append(",\"queues\":[");
            for (int i = 0; i < mqAll.size(); i++) {
                if (i > 0) o.append(',');
                o.append('[').append(q(mqAll.get(i).getBrokerName())).append(',').append(mqAll.get(i).getQueueId()).append(']');
            }
            o.append("],\"cids\":[");
            for (int i = 0; i < cidAll.size(); i++) { if (i > 0) o.append(','); o.append(q(cidAll.get(i))); }
            o.append("],\"virtual_nodes\":").append(vn).append(",\"idcs\":[");
            List<String> sidcs = new ArrayList<>(idcs); Collections.sort(sidcs);
            for (int i = 0; i < sidcs.size(); i++) { if (i > 0) o.append(','); o.append(q(sidcs.get(i))); }
            o.append("],\"results\":{");
            boolean first = true;
            for (Map.Entry<String, AllocateMessageQueueStrategy> e : st.entrySet()) {
                if (!first) o.append(','); first = false;
                o.append(q(e.getKey())).append(":[");
                for (int i = 0; i < cidAll.size(); i++) {
                    if (i > 0) o.append(',');
                    o.append(ints(e.getValue().allocate("g", cidAll.get(i), mqAll, cidAll), mqAll));
                }
                o.append(']');
            }
            o.append("}}");
            System.out.println(o);
        }
    }
}
