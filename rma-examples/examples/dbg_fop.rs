use rma_win::*;
fn main() {
    let r = rma_win::launch(2, |world| -> Result<()> {
        let me = Rank::new(world.rank() as u32);
        let mut counter = [0i32];
        {
            let win = Window::create(&world, &mut counter, &Info::new())?;
            eprintln!("local before: {:?}", win.local_vec::<i32>()?);
            for i in 0..3 {
                let mut out = [-1i32];
                win.lock(LockType::Shared, me, Assert::NONE)?;
                eprintln!("local in lock: {:?}", win.local_vec::<i32>()?);
                win.get_accumulate(&[3], &mut out, me, 0, Op::Sum)?;
                win.unlock(me)?;
                eprintln!(
                    "call {i} got {:x}, local {:?}",
                    out[0],
                    win.local_vec::<i32>()?
                );
            }
        }
        Ok(())
    });
    eprintln!("{r:?}");
}
