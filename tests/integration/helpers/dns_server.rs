//! A DNS server on loopback for the custom domains' tests: UDP and TCP on
//! one port, answering from names a test sets and changes while it runs,
//! so that the real resolver (`proxydeck::dns`) is tested over the wire
//! and no test asks any other server.
//!
//! It answers as an authoritative server does: a name it holds with its
//! records (TXT, or an A record to stand for "other types only"), NODATA
//! for a type the name lacks, NXDOMAIN for a name it does not hold; and,
//! as a test asks, SERVFAIL or nothing at all for a name. An answer that
//! does not fit in the datagram the query allows goes truncated over UDP,
//! whole over TCP. It stops when dropped.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use hickory_proto::op::{Message, Metadata, ResponseCode};
use hickory_proto::rr::rdata::{A, TXT};
use hickory_proto::rr::{RData, Record, RecordType};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::task::{JoinHandle, JoinSet};

/// The records' TTL: any, since the resolver keeps no cache.
const TTL: u32 = 300;
/// A character-string's longest length (RFC 1035, 3.3).
const MAX_STRING: usize = 255;

pub struct DnsServer {
    addr: SocketAddr,
    zone: Arc<Mutex<Zone>>,
    tasks: Vec<JoinHandle<()>>,
}

#[derive(Default)]
struct Zone {
    /// By name in lower case, without the trailing dot.
    names: HashMap<String, Entry>,
    queries: usize,
    tcp_queries: usize,
}

enum Entry {
    /// TXT records, each its character-strings.
    Txt(Vec<Vec<Vec<u8>>>),
    /// An A record and no TXT.
    A(Ipv4Addr),
    ServFail,
    Silent,
}

impl DnsServer {
    /// A server on 127.0.0.1, UDP and TCP on the same free port, holding
    /// no name yet. Call it inside the test's tokio runtime.
    pub fn start() -> Self {
        let (udp, tcp) = bind_pair();
        let addr = udp.local_addr().expect("the UDP socket's address");
        let zone = Arc::new(Mutex::new(Zone::default()));
        let udp = UdpSocket::from_std(udp).expect("a tokio UDP socket");
        let tcp = TcpListener::from_std(tcp).expect("a tokio TCP listener");
        let tasks = vec![
            tokio::spawn(serve_udp(udp, zone.clone())),
            tokio::spawn(serve_tcp(tcp, zone.clone())),
        ];
        Self { addr, zone, tasks }
    }

    /// Where to send queries (UDP and TCP alike).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `name` holds one TXT record per value, each value one
    /// character-string, or several of 255 bytes when it is longer (as DNS
    /// providers split long values).
    pub fn set_txt(&self, name: &str, values: &[&str]) {
        let records = values
            .iter()
            .map(|value| {
                value
                    .as_bytes()
                    .chunks(MAX_STRING)
                    .map(<[u8]>::to_vec)
                    .collect()
            })
            .collect();
        self.set(name, Entry::Txt(records));
    }

    /// `name` holds one TXT record per item, made of the character-strings
    /// given (`&[&["proxydeck-verification=", "abc"]]`: one record in two).
    pub fn set_txt_strings(&self, name: &str, records: &[&[&str]]) {
        let records = records
            .iter()
            .map(|strings| strings.iter().map(|s| s.as_bytes().to_vec()).collect())
            .collect();
        self.set(name, Entry::Txt(records));
    }

    /// `name` holds an A record and no TXT record.
    pub fn set_a(&self, name: &str, address: Ipv4Addr) {
        self.set(name, Entry::A(address));
    }

    /// Queries for `name` are answered SERVFAIL.
    pub fn set_servfail(&self, name: &str) {
        self.set(name, Entry::ServFail);
    }

    /// Queries for `name` are never answered.
    pub fn set_silent(&self, name: &str) {
        self.set(name, Entry::Silent);
    }

    /// `name` is gone: NXDOMAIN.
    pub fn remove(&self, name: &str) {
        self.zone.lock().unwrap().names.remove(&key(name));
    }

    /// The queries received so far, over UDP and TCP, answered or not.
    pub fn queries(&self) -> usize {
        self.zone.lock().unwrap().queries
    }

    /// Of [`DnsServer::queries`], those received over TCP.
    pub fn tcp_queries(&self) -> usize {
        self.zone.lock().unwrap().tcp_queries
    }

    fn set(&self, name: &str, entry: Entry) {
        self.zone.lock().unwrap().names.insert(key(name), entry);
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        // The TCP task owns its connections' tasks (a JoinSet): aborting
        // it ends them too.
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Names compare case-insensitively, with or without the trailing dot.
fn key(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// A UDP socket and a TCP listener on the same free loopback port: the
/// system picks the UDP port, and another is tried in the rare case that
/// its TCP twin is taken.
fn bind_pair() -> (std::net::UdpSocket, std::net::TcpListener) {
    for _ in 0..50 {
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("a loopback UDP socket");
        let addr = udp.local_addr().expect("the UDP socket's address");
        if let Ok(tcp) = std::net::TcpListener::bind(addr) {
            udp.set_nonblocking(true)
                .expect("a non-blocking UDP socket");
            tcp.set_nonblocking(true)
                .expect("a non-blocking TCP listener");
            return (udp, tcp);
        }
    }
    panic!("no loopback port free for both UDP and TCP");
}

async fn serve_udp(socket: UdpSocket, zone: Arc<Mutex<Zone>>) {
    let mut buffer = vec![0; 65_535];
    loop {
        let Ok((length, peer)) = socket.recv_from(&mut buffer).await else {
            continue;
        };
        if let Some(answer) = answer(&zone, &buffer[..length], Transport::Udp) {
            let _ = socket.send_to(&answer, peer).await;
        }
    }
}

async fn serve_tcp(listener: TcpListener, zone: Arc<Mutex<Zone>>) {
    let mut connections = JoinSet::new();
    loop {
        if let Ok((stream, _)) = listener.accept().await {
            connections.spawn(serve_connection(stream, zone.clone()));
        }
        while connections.try_join_next().is_some() {}
    }
}

/// Messages over TCP, each after its length in two bytes (RFC 1035,
/// 4.2.2), until the client closes.
async fn serve_connection(mut stream: TcpStream, zone: Arc<Mutex<Zone>>) {
    loop {
        let Ok(length) = stream.read_u16().await else {
            return;
        };
        let mut query = vec![0; usize::from(length)];
        if stream.read_exact(&mut query).await.is_err() {
            return;
        }
        if let Some(answer) = answer(&zone, &query, Transport::Tcp) {
            let length = u16::try_from(answer.len()).expect("an answer of at most 64 KiB");
            let mut framed = length.to_be_bytes().to_vec();
            framed.extend_from_slice(&answer);
            if stream.write_all(&framed).await.is_err() {
                return;
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Transport {
    Udp,
    Tcp,
}

/// The answer to one query, as bytes; `None` for a silent name or a
/// message that is not a query.
fn answer(zone: &Mutex<Zone>, query: &[u8], transport: Transport) -> Option<Vec<u8>> {
    let request = Message::from_vec(query).ok()?;
    let question = request.queries.first()?.clone();
    let mut response = Message::response(request.metadata.id, request.metadata.op_code);
    response.metadata = Metadata::response_from_request(&request.metadata);
    response.metadata.authoritative = true;
    response.add_query(question.clone());
    {
        let mut zone = zone.lock().unwrap();
        zone.queries += 1;
        if transport == Transport::Tcp {
            zone.tcp_queries += 1;
        }
        let name = question.name().clone();
        match zone.names.get(&key(&name.to_ascii())) {
            None => response.metadata.response_code = ResponseCode::NXDomain,
            Some(Entry::Silent) => return None,
            Some(Entry::ServFail) => response.metadata.response_code = ResponseCode::ServFail,
            Some(Entry::Txt(records)) if question.query_type() == RecordType::TXT => {
                for strings in records {
                    let strings = strings.iter().map(Vec::as_slice).collect();
                    let data = RData::TXT(TXT::from_bytes(strings));
                    response.add_answer(Record::from_rdata(name.clone(), TTL, data));
                }
            }
            Some(Entry::A(address)) if question.query_type() == RecordType::A => {
                let data = RData::A(A(*address));
                response.add_answer(Record::from_rdata(name.clone(), TTL, data));
            }
            // The name exists without records of the type asked: NODATA.
            Some(_) => {}
        }
    }
    let bytes = response.to_vec().expect("an answer that encodes");
    if transport == Transport::Udp && bytes.len() > usize::from(request.max_payload()) {
        return response.truncate().to_vec().ok();
    }
    Some(bytes)
}
